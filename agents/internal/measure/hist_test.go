package measure

import (
	"math"
	"testing"
)

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for i := 1; i <= 10000; i++ {
		h.Add(float64(i) * 1e-6) // 1 us .. 10 ms uniform
	}
	for _, tc := range []struct{ q, want float64 }{{0.5, 5e-3}, {0.99, 9.9e-3}, {0.01, 1e-4}} {
		if got := h.Quantile(tc.q); math.Abs(got-tc.want)/tc.want > 0.05 {
			t.Errorf("q%.2f = %v, want %v +-5%%", tc.q, got, tc.want)
		}
	}
	c := h.Cumulative([]float64{1e-3, 1})
	if c[1] != 10000 || c[1e-3] < 900 || c[1e-3] > 1000 {
		t.Errorf("cumulative %v", c)
	}
	var e Hist
	if !math.IsNaN(e.Quantile(0.5)) {
		t.Error("empty quantile not NaN")
	}
}
