package tp4

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A peer that never ends its TSDU: the receiver reassembles up to
// MaxTSDU octets, then gives the connection up with a DR instead of
// keeping every octet it is sent.
func TestReceiverBoundsTheTSDU(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxTSDU = 2048
	_, r := pair(t, DefaultConfig(), cfg)
	var got [][]byte
	r.OnTSDU = func(b []byte, _ time.Time) { got = append(got, b) }
	dt := func(seq uint32, n int, eot bool) {
		r.Input(Encode(TPDU{Type: DT, DstRef: r.localRef, Seq: seq, EOT: eot, Data: bytes.Repeat([]byte{byte(seq)}, n)}), t0)
	}
	// at the bound: delivered
	dt(0, 1000, false)
	dt(1, 1000, false)
	dt(2, 48, true)
	if len(got) != 1 || len(got[0]) != 2048 || !r.Open() {
		t.Fatalf("a TSDU of 2048 octets (the bound): delivered %d, open %v", len(got), r.Open())
	}
	drain(t, r, t0)
	// past it: the third DT without an end makes 3000 octets
	dt(3, 1000, false)
	dt(4, 1000, false)
	dt(5, 1000, false)
	if r.Open() || r.Err() == nil || !strings.Contains(r.Err().Error(), "a TSDU of more than 2048 octets (3000 without its end)") {
		t.Fatalf("after 3000 octets without an end: open %v, err %v", r.Open(), r.Err())
	}
	if len(r.partial) != 0 || r.Stats(t0).Dropped["tsdu_too_large"] != 1 {
		t.Fatalf("kept %d octets, dropped %v", len(r.partial), r.Stats(t0).Dropped)
	}
	out := drain(t, r, t0)
	if len(out) == 0 || out[len(out)-1].Type != DR {
		t.Fatalf("the receiver sent %q, want a DR last", types(out))
	}
	// nothing more is taken
	dt(6, 1000, false)
	if len(r.partial) != 0 || len(got) != 1 {
		t.Fatalf("after the DR: kept %d octets, %d TSDUs", len(r.partial), len(got))
	}
}

func TestMaxTSDUValidated(t *testing.T) {
	for _, n := range []int{-1, MaxTSDUSize + 1} {
		c := DefaultConfig()
		c.MaxTSDU = n
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max TSDU") {
			t.Errorf("MaxTSDU %d: %v, want an error naming max TSDU", n, err)
		}
	}
}
