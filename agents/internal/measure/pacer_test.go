package measure

import (
	"math"
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		arrival Arrival
		tol     int
	}{{Constant, 1}, {Poisson, 150}} {
		p, err := NewPacer(2000, tc.arrival, t0, 3)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ms := 0; ms <= 1000; ms++ {
			n += p.Due(t0.Add(time.Duration(ms)*time.Millisecond), 1<<20)
		}
		if n < 2000-tc.tol || n > 2001+tc.tol {
			t.Errorf("%s: %d arrivals in 1 s at 2000/s", tc.arrival, n)
		}
	}
	for _, r := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NewPacer(r, Constant, t0, 1); err == nil {
			t.Errorf("rate %v accepted", r)
		}
	}
	if _, err := NewPacer(1, "bursty", t0, 1); err == nil {
		t.Error("unknown arrival accepted")
	}
}
