package spims

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDistributions(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		js         string
		unit       Unit
		mean, tol  float64
		lo, hi     float64
		sdMin, sdM float64
	}{
		{`{"dist":"constant","value":32}`, Bytes, 32, 0, 32, 32, 0, 0},
		{`{"dist":"uniform","min":10,"max":20}`, Bytes, 15, 0.1, 10, 20, 2.8, 3.4},
		{`{"dist":"normal","mean":1000,"sd":100}`, Bytes, 1000, 3, 500, 1500, 95, 105},
		{`{"dist":"exponential","mean":"1ms"}`, Seconds, 1e-3, 3e-5, 0, math.Inf(1), 0.95e-3, 1.05e-3},
		{`{"dist":"bivalue","value":64,"value2":1400,"p":0.9}`, Bytes, 0.9*64 + 0.1*1400, 8, 64, 1400, 0, math.Inf(1)},
		{`{"dist":"uniform","min":"1ms","max":"3ms"}`, Seconds, 2e-3, 2e-5, 1e-3, 3e-3, 0, math.Inf(1)},
	} {
		t.Run(tc.js, func(t *testing.T) {
			d, err := ParseDist(json.RawMessage(tc.js), tc.unit)
			if err != nil {
				t.Fatal(err)
			}
			r := newRand(1, 1)
			var xs []float64
			for i := 0; i < n; i++ {
				v := d.Sample(r)
				if tc.unit == Bytes {
					v = float64(d.Size(r, math.MaxInt32))
				}
				if v < tc.lo || v > tc.hi {
					t.Fatalf("draw %v outside [%v, %v]", v, tc.lo, tc.hi)
				}
				xs = append(xs, v)
			}
			s := Summarize(xs)
			if math.Abs(float64(s.Mean)-tc.mean) > tc.tol {
				t.Errorf("mean %v, want %v +- %v", s.Mean, tc.mean, tc.tol)
			}
			if math.Abs(d.Mean()-tc.mean) > tc.tol {
				t.Errorf("Mean() %v, want %v", d.Mean(), tc.mean)
			}
			if sd := float64(s.SD); sd < tc.sdMin || sd > tc.sdM {
				t.Errorf("sd %v, want %v..%v", sd, tc.sdMin, tc.sdM)
			}
		})
	}
}

func TestDistSeeded(t *testing.T) {
	d, _ := ParseDist(json.RawMessage(`{"dist":"exponential","mean":100}`), Bytes)
	a, b := newRand(42, 1), newRand(42, 1)
	for i := 0; i < 100; i++ {
		if x, y := d.Size(a, 1<<20), d.Size(b, 1<<20); x != y {
			t.Fatalf("draw %d: %d != %d with the same seed", i, x, y)
		}
	}
	if d.Size(newRand(1, 1), 5) > 5 {
		t.Error("size not clamped to the maximum")
	}
	if got := Const(0.02, Seconds).Duration(newRand(1, 1)); got != 20*time.Millisecond {
		t.Errorf("duration %v", got)
	}
}

func TestParseDistErrors(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`{"dist":"zipf","value":1}`, "want one of"},
		{`{"dist":"uniform","min":1}`, `"max" missing`},
		{`{"dist":"constant","value":1,"sd":2}`, `not "sd"`},
		{`{"dist":"uniform","min":5,"max":1}`, "below min"},
		{`{"dist":"bivalue","value":1,"value2":2,"p":1.5}`, "probability"},
		{`{"dist":"constant","value":-1}`, ">= 0"},
		{`[1]`, "want an object"},
	} {
		if _, err := ParseDist(json.RawMessage(tc.js), Bytes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.js, err, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	if s.Count != 10 || s.Mean != 5.5 || s.Min != 1 || s.Max != 10 || s.P50 != 5 || s.P99 != 10 || s.From != "samples" {
		t.Errorf("%+v", s)
	}
	if math.Abs(float64(s.SD)-3.02765) > 1e-4 || math.Abs(float64(s.NormalizedSD)-3.02765/5.5) > 1e-4 {
		t.Errorf("sd %v, normalized %v", s.SD, s.NormalizedSD)
	}
	e := Summarize(nil)
	if b, _ := json.Marshal(e); !strings.Contains(string(b), `"mean":null`) {
		t.Errorf("empty stats %s", b)
	}
}

func TestRecorderFallsBackToHistogram(t *testing.T) {
	r := Recorder{}
	r.samples = make([]float64, MaxSamples) // as if full
	for i := range r.samples {
		r.samples[i] = 1e-3
	}
	r.n, r.mean, r.min, r.max = MaxSamples, 1e-3, 1e-3, 1e-3
	for i := 0; i < MaxSamples; i++ {
		r.hist.Add(1e-3)
	}
	r.Add(2*time.Millisecond, time.Now())
	s := r.Stats()
	if s.From != "histogram" || math.Abs(float64(s.P50)-1e-3)/1e-3 > 0.05 || r.Samples() != nil {
		t.Errorf("%+v", s)
	}
}
