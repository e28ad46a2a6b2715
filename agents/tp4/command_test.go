package tp4

import (
	"strings"
	"testing"
	"time"
)

func TestRunOptionsCheckNamesTheFlag(t *testing.T) {
	ok := RunOptions{LinkKbit: 64, TSDUs: 1, TSDUSize: 10240, Limit: time.Minute, BER: 1e-9}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for flag, bad := range map[string]func(*RunOptions){
		"--tsdus":          func(o *RunOptions) { o.TSDUs = 0 },
		"--tsdu-size":      func(o *RunOptions) { o.TSDUSize = MaxTSDUSize + 1 },
		"--expedited-rate": func(o *RunOptions) { o.ExpRate = 2 },
		"--link-kbit":      func(o *RunOptions) { o.LinkKbit = 0 },
		"--time-limit":     func(o *RunOptions) { o.Limit = 0 },
		"--ber":            func(o *RunOptions) { o.BER = 0.1 },
		"--loss":           func(o *RunOptions) { o.Loss = -1 },
	} {
		o := ok
		bad(&o)
		if err := o.Check(); err == nil || !strings.HasPrefix(err.Error(), flag+" ") {
			t.Errorf("%s: %v", flag, err)
		}
	}
}
