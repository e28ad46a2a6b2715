package linkem

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParsePercent(t *testing.T) {
	good := map[string]Percent{"0": 0, "1.5": 1.5, "1.5%": 1.5, " 20 % ": 20, "100%": 100, "0.5": 0.5, "1e-3": 0.001}
	for in, want := range good {
		got, err := ParsePercent(in)
		if err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":      "want a number from 0 to 100",
		"%":     "want a number from 0 to 100",
		"abc":   "want a number from 0 to 100",
		"101":   "out of range",
		"-1%":   "out of range",
		"NaN":   "out of range",
		"0.2.3": "want a number",
	}
	for in, want := range bad {
		if _, err := ParsePercent(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePercent(%q) error = %v, want it to say %q", in, err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{"0": 0, "": 0, "10ms": 10 * time.Millisecond, "1.5ms": 1500 * time.Microsecond,
		"250us": 250 * time.Microsecond, "2s": 2 * time.Second, "100ns": 100}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || time.Duration(got) != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"10": "has no unit", "1.5": "has no unit", "ten ms": "want a number with a unit", "5 parsecs": "invalid duration"} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q) error = %v, want it to say %q", in, err, want)
		}
	}
}

func TestParseBER(t *testing.T) {
	if b, err := ParseBER("1e-6"); err != nil || b != 1e-6 {
		t.Errorf("ParseBER(1e-6) = %v, %v", b, err)
	}
	for _, in := range []string{"1", "-1e-6", "x", "2"} {
		if _, err := ParseBER(in); err == nil {
			t.Errorf("ParseBER(%q) accepted", in)
		}
	}
}

func TestParseGEModel(t *testing.T) {
	tests := []struct {
		in   string
		want GEModel
	}{
		{"", GEModel{}},
		{"1", GEModel{Enabled: true, P: 1, R: 99, OneMinusH: 100, OneMinusK: 0}},
		{"1%,30%", GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 100, OneMinusK: 0}},
		{"1,30,80", GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 80, OneMinusK: 0}},
		{"1,30,80,0.5%", GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 80, OneMinusK: 0.5}},
	}
	for _, tt := range tests {
		got, err := ParseGEModel(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseGEModel(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for in, want := range map[string]string{
		"1,2,3,4,5": "at most 4 values",
		"1,x":       "Gilbert-Elliott r",
		"1,0":       "stay in the bad state forever",
		"1,2,300":   "Gilbert-Elliott 1-h",
	} {
		if _, err := ParseGEModel(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGEModel(%q) error = %v, want it to say %q", in, err, want)
		}
	}
	m, _ := ParseGEModel("1,30,100,0")
	if got, want := m.StationaryLoss(), 0.01/0.31; math.Abs(got-want) > 1e-12 {
		t.Errorf("StationaryLoss = %v, want %v", got, want)
	}
	if s := m.String(); s != "1%,30%,100%,0%" {
		t.Errorf("String = %q", s)
	}
}

func TestBERPacketProbTable(t *testing.T) {
	// 1-(1-ber)^(8*len), checked against values computed independently.
	tests := []struct {
		ber  BER
		n    int
		want float64
	}{
		{0, 1500, 0},
		{1e-9, 1500, 1.19999928e-05},
		{1e-6, 64, 5.11869e-04},
		{1e-6, 1500, 0.0119283},
		{1e-5, 1500, 0.1130796},
		{1e-4, 1500, 0.6988289},
		{1e-3, 1500, 0.9999939},
		{1e-6, 0, 0},
	}
	for _, tt := range tests {
		got := tt.ber.PacketProb(tt.n)
		if tt.want == 0 && got != 0 || tt.want != 0 && math.Abs(got-tt.want)/tt.want > 1e-5 {
			t.Errorf("BER %g, %d bytes: per-packet probability %.9g, want %.9g", float64(tt.ber), tt.n, got, tt.want)
		}
		direct := 1 - math.Pow(1-float64(tt.ber), float64(8*tt.n))
		if math.Abs(got-direct) > 1e-9 {
			t.Errorf("BER %g, %d bytes: %.12g differs from the direct formula %.12g", float64(tt.ber), tt.n, got, direct)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := []Config{
		{},
		{Delay: Duration(20 * time.Millisecond), Jitter: Duration(5 * time.Millisecond), Distribution: DistNormal, Loss: 1, Reorder: 25, Corrupt: 0.1, Duplicate: 1, Limit: 500},
		{LossGE: GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 100}, BER: 1e-6},
		{Jitter: Duration(time.Millisecond)}, // clamped at 0
		{Delay: Duration(MaxHold)},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	bad := []struct {
		c    Config
		want []string
	}{
		{Config{Delay: -1}, []string{"delay: must not be negative"}},
		{Config{Jitter: -1}, []string{"jitter: must not be negative"}},
		{Config{Distribution: "gamma"}, []string{`distribution: unknown distribution "gamma" (want one of uniform, normal, pareto, paretonormal)`}},
		{Config{Delay: Duration(50 * time.Second), Jitter: Duration(5 * time.Second), Distribution: DistPareto}, []string{"safety limit"}},
		{Config{Loss: 150}, []string{"loss: percentage 150 is out of range"}},
		{Config{Loss: 1, LossGE: GEModel{Enabled: true, P: 1, R: 10, OneMinusH: 100}}, []string{"loss-ge: cannot be combined with loss"}},
		{Config{Corrupt: 1, BER: 1e-6}, []string{"ber: cannot be combined with corrupt"}},
		{Config{Reorder: 10}, []string{"reorder: needs a delay"}},
		{Config{Limit: -1}, []string{"limit: must be between 1 and"}},
		{Config{Limit: MaxLimit + 1}, []string{"limit: must be between 1 and"}},
		{Config{Loss: -1, Reorder: 5, Duplicate: 101}, []string{"loss:", "reorder:", "duplicate:"}},
	}
	for _, tt := range bad {
		err := tt.c.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) accepted", tt.c)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(%+v) = %q, want it to contain %q", tt.c, err, w)
			}
		}
	}
}

func TestConfigJSON(t *testing.T) {
	c, err := DecodeConfig([]byte(`{"delay":"20ms","jitter":"2ms","distribution":"pareto","keep-order":true,
		"loss":"1.5%","reorder":25,"corrupt":"0.5","duplicate":1,"limit":200,"ber":0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Delay: Duration(20 * time.Millisecond), Jitter: Duration(2 * time.Millisecond), Distribution: DistPareto,
		KeepOrder: true, Loss: 1.5, Reorder: 25, Corrupt: 0.5, Duplicate: 1, Limit: 200}
	if c != want {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"delay":"20ms","jitter":"2ms","distribution":"pareto","keep-order":true,"loss":"1.5%","loss-ge":"",` +
		`"reorder":"25%","corrupt":"0.5%","ber":0,"duplicate":"1%","limit":200}`
	if string(b) != wantJSON {
		t.Errorf("marshalled\n %s\nwant\n %s", b, wantJSON)
	}
	back, err := DecodeConfig(b)
	if err != nil || back != c {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// Empty object: defaults.
	if c, err := DecodeConfig([]byte(`{}`)); err != nil || c != (Config{Distribution: DistUniform, Limit: DefaultLimit}) {
		t.Errorf("{} decoded to %+v, %v", c, err)
	}
	ge, err := DecodeConfig([]byte(`{"loss-ge":"1,30"}`))
	if err != nil || ge.LossGE != (GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 100}) {
		t.Errorf("loss-ge decoded to %+v, %v", ge.LossGE, err)
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`{"delay":20}`, []string{"delay: duration 20 has no unit"}},
		{`{"delay":"20"}`, []string{"delay: duration \"20\" has no unit"}},
		{`{"loss":"120%"}`, []string{"loss: percentage 120 is out of range"}},
		{`{"loss":true}`, []string{"loss: percentage must be a number or a string"}},
		{`{"limit":"many"}`, []string{"limit: wrong type"}},
		{`{"rate":"10mbit"}`, []string{"rate: unknown field"}},
		{`{"seed":1}`, []string{"seed: unknown field"}},
		{`{"delay":"1ms","loss":"x","jitter":"y"}`, []string{"jitter:", "loss:"}},
		{`{"reorder":"10%"}`, []string{"reorder: needs a delay"}},
		{`[1]`, []string{"invalid config JSON"}},
		{`null`, []string{"want an object"}},
		{`{} {}`, []string{"trailing data"}},
		{`{"delay":`, []string{"invalid config JSON"}},
	}
	for _, tt := range tests {
		_, err := DecodeConfig([]byte(tt.in))
		if err == nil {
			t.Errorf("DecodeConfig(%s) accepted", tt.in)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("DecodeConfig(%s) = %q, want it to contain %q", tt.in, err, w)
			}
		}
	}
}
