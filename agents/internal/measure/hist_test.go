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

func TestHistBuckets(t *testing.T) {
	var h Hist
	for _, v := range []float64{-1e-6, 50e-9, 1e-3, 1e-3, 2e-3, 1.5} {
		h.Add(v)
	}
	b := h.Buckets()
	var n uint64
	prev := 0.0
	for _, x := range b {
		if x.Le <= prev || x.Count == 0 {
			t.Fatalf("buckets not increasing and non-empty: %v", b)
		}
		prev, n = x.Le, n+x.Count
	}
	if n != h.Count() || b[0].Le != histMin || b[0].Count != 2 {
		t.Fatalf("buckets %v: %d samples, want %d, two under 100 ns first", b, n, h.Count())
	}
	// each sample lies in its bucket: le within one bucket's width above it
	for _, v := range []float64{1e-3, 2e-3, 1.5} {
		found := false
		for _, x := range b {
			if v <= x.Le && v > x.Le/math.Exp2(1.0/histPerOct) {
				found = true
			}
		}
		if !found {
			t.Errorf("%v in no bucket of %v", v, b)
		}
	}
	var e Hist
	if len(e.Buckets()) != 0 {
		t.Error("empty histogram has buckets")
	}
}

// Std and CI99 agree with the two-pass formula, also after merging halves
// (the dishost merges per-socket histograms).
func TestHistStdMerge(t *testing.T) {
	var all, a, b Hist
	var xs []float64
	for i := 0; i < 5000; i++ {
		x := 1e-3 + 2e-4*math.Sin(float64(i)*0.7) + float64(i%7)*1e-5
		xs = append(xs, x)
		all.Add(x)
		if i < 1234 {
			a.Add(x)
		} else {
			b.Add(x)
		}
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	want := math.Sqrt(ss / float64(len(xs)-1))
	a.Merge(&b)
	for name, h := range map[string]*Hist{"added": &all, "merged": &a} {
		if got := h.Std(); math.Abs(got-want)/want > 1e-9 {
			t.Errorf("%s: std %v, want %v", name, got, want)
		}
		if got, w := h.CI99(), 2.5758293035489*want/math.Sqrt(5000); math.Abs(got-w)/w > 1e-9 {
			t.Errorf("%s: ci99 %v, want %v", name, got, w)
		}
	}
	var one Hist
	one.Add(1)
	if !math.IsNaN(one.Std()) || !math.IsNaN(one.CI99()) {
		t.Errorf("one sample: std %v ci99 %v, want NaN", one.Std(), one.CI99())
	}
	var empty Hist
	one.Merge(&empty)
	if one.Count() != 1 || !math.IsNaN(one.Std()) {
		t.Errorf("merging an empty histogram changed it: n %d std %v", one.Count(), one.Std())
	}
}
