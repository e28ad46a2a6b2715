package linkem

import (
	"math"
	"math/rand/v2"
	"testing"
)

// moments of t over n draws.
func sampleMoments(f distFunc, n int, seed uint64) (mean, sd, lo, hi float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	var s, s2 float64
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		t := f(r)
		s += t
		s2 += t * t
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	mean = s / float64(n)
	return mean, math.Sqrt(s2/float64(n) - mean*mean), lo, hi
}

// quantileMoments integrates a quantile function over (0,1) (midpoint
// rule): the exact moments the sampler must reproduce.
func quantileMoments(q func(float64) float64) (mean, sd float64) {
	const n = 1 << 21
	var s, s2 float64
	for i := 0; i < n; i++ {
		t := q((float64(i) + 0.5) / n)
		s += t
		s2 += t * t
	}
	mean = s / n
	return mean, math.Sqrt(s2/n - mean*mean)
}

func TestDistributionMoments(t *testing.T) {
	const n = 400000
	// Pareto(1,3) capped at c=4.5 (t=4): E[X]=1.5-0.5/c^2, E[X^2]=3-2/c.
	c := 4.5
	ex, ex2 := 1.5-0.5/(c*c), 3-2/c
	paretoMean := (ex - 1.5) * 4 / 3
	paretoSD := math.Sqrt(ex2-ex*ex) * 4 / 3
	pnMean, pnSD := quantileMoments(paretoNormalQuantile)
	tests := []struct {
		name       string
		mean, sd   float64
		minT, maxT float64
	}{
		{DistUniform, 0, 1 / math.Sqrt(3), -1, 1},
		{DistNormal, 0, 0.99966, -4, 4}, // truncated at +-4 sigma
		{DistPareto, paretoMean, paretoSD, -2.0 / 3, 4},
		{DistParetoNormal, pnMean, pnSD, -4, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, sd, lo, hi := sampleMoments(distribution(tt.name), n, 42)
			se := tt.sd / math.Sqrt(n)
			if math.Abs(mean-tt.mean) > 5*se {
				t.Errorf("mean %.5f, want %.5f +- %.5f", mean, tt.mean, 5*se)
			}
			if math.Abs(sd-tt.sd)/tt.sd > 0.02 {
				t.Errorf("sd %.5f, want %.5f +- 2%%", sd, tt.sd)
			}
			if lo < tt.minT-1e-9 || hi > tt.maxT+1e-9 {
				t.Errorf("range [%.4f, %.4f] outside [%.4f, %.4f]", lo, hi, tt.minT, tt.maxT)
			}
			t.Logf("%s: mean %.4f sd %.4f range [%.3f, %.3f] (want mean %.4f sd %.4f)", tt.name, mean, sd, lo, hi, tt.mean, tt.sd)
		})
	}
	// The documented constants.
	if math.Abs(paretoMean+0.0329) > 0.0005 || math.Abs(paretoSD-0.821) > 0.001 {
		t.Errorf("pareto mean %.4f sd %.4f differ from the documented -0.0329 and 0.821", paretoMean, paretoSD)
	}
}

// The delays drawn by the Decider have mean delay+jitter*E[t] and sd
// jitter*sd(t), in nanoseconds, with negative delays clamped to 0.
func TestDecidedDelayMoments(t *testing.T) {
	const n = 200000
	for _, dist := range Distributions {
		p := compile(Config{Delay: Duration(20e6), Jitter: Duration(4e6), Distribution: dist, Limit: MaxLimit}, 0)
		d := NewDecider(7)
		var s, s2 float64
		for i := 0; i < n; i++ {
			dec, _, _ := d.Decide(p, 0, 100, 20, 0)
			v := float64(dec.Release)
			s += v
			s2 += v * v
		}
		mean := s / n
		sd := math.Sqrt(s2/n - mean*mean)
		tm, tsd, _, _ := sampleMoments(distribution(dist), n, 99)
		wantMean, wantSD := 20e6+4e6*tm, 4e6*tsd
		if math.Abs(mean-wantMean) > 0.01*20e6 || math.Abs(sd-wantSD)/wantSD > 0.03 {
			t.Errorf("%s: delay mean %.0fns sd %.0fns, want %.0f and %.0f", dist, mean, sd, wantMean, wantSD)
		}
	}
}
