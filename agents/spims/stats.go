package spims

import (
	"math"
	"sort"
	"strconv"
	"time"

	"protolab/agents/internal/measure"
)

// MaxSamples is how many per-iteration samples a run keeps (8 MiB); past
// it quantiles come from the histogram (measure.Hist, relative error under
// 4.4 %) and samples_seconds is left out.
const MaxSamples = 1 << 20

// MaxMarks is how many wall-clock marks (late or timed-out iterations) a
// run keeps; the rest are only counted.
const MaxMarks = 100000

// Float is a float64 that encodes NaN and infinities as JSON null.
type Float float64

func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// Stats summarise per-iteration values (seconds, or bytes/s).
type Stats struct {
	Count        int    `json:"count"`
	Mean         Float  `json:"mean"`
	SD           Float  `json:"sd"`
	NormalizedSD Float  `json:"normalized_sd"` // sd/mean (SPIMS reports it above 0.05)
	Min          Float  `json:"min"`
	Max          Float  `json:"max"`
	P50          Float  `json:"p50"`
	P99          Float  `json:"p99"`
	P999         Float  `json:"p999"`
	From         string `json:"quantiles_from"` // "samples" (exact) or "histogram"
}

// Recorder collects per-iteration times: moments exactly (Welford),
// samples up to MaxSamples, a histogram always, and the wall-clock start of
// every iteration over the late bound and of every timeout.
type Recorder struct {
	LateBound time.Duration

	n          int
	mean, m2   float64
	min, max   float64
	samples    []float64
	dropped    bool
	hist       measure.Hist
	late       int
	lateAt     []int64
	lateD      []float64 // the late iterations' seconds, beside lateAt
	Block      int       // iterations per block whose maximum is kept (0: none)
	blockMax   []float64 // the maximum of each block of Block iterations (SCIOP Fig. 8), the last one partial
	timeouts   int
	timeoutAt  []int64
	marksShort int // marks not kept (over MaxMarks)
}

// Add records one iteration of d that started at start (wall clock).
func (r *Recorder) Add(d time.Duration, start time.Time) {
	v := d.Seconds()
	r.n++
	if r.n == 1 {
		r.min, r.max = v, v
	}
	r.min, r.max = math.Min(r.min, v), math.Max(r.max, v)
	delta := v - r.mean
	r.mean += delta / float64(r.n)
	r.m2 += delta * (v - r.mean)
	r.hist.Add(v)
	if len(r.samples) < MaxSamples {
		r.samples = append(r.samples, v)
	} else {
		r.dropped = true
	}
	if r.LateBound > 0 && d > r.LateBound {
		r.late++
		if r.room() {
			r.lateAt = append(r.lateAt, start.UnixNano())
			r.lateD = append(r.lateD, v)
		}
	}
	if r.Block > 0 {
		if (r.n-1)%r.Block == 0 {
			r.blockMax = append(r.blockMax, v)
		} else if last := len(r.blockMax) - 1; v > r.blockMax[last] {
			r.blockMax[last] = v
		}
	}
}

// Timeout records an iteration that got no answer in time.
func (r *Recorder) Timeout(start time.Time) {
	r.timeouts++
	if r.room() {
		r.timeoutAt = append(r.timeoutAt, start.UnixNano())
	}
}

// room says whether one more mark is kept, counting the ones that are not.
func (r *Recorder) room() bool {
	if len(r.lateAt)+len(r.timeoutAt) < MaxMarks {
		return true
	}
	r.marksShort++
	return false
}

// Count is the number of completed iterations.
func (r *Recorder) Count() int { return r.n }

// Stats of the recorded times in seconds.
func (r *Recorder) Stats() Stats {
	if r.dropped {
		s := moments(r.n, r.mean, r.m2, r.min, r.max)
		s.P50, s.P99, s.P999 = Float(r.hist.Quantile(0.5)), Float(r.hist.Quantile(0.99)), Float(r.hist.Quantile(0.999))
		s.From = "histogram"
		return s
	}
	return Summarize(r.samples)
}

// Samples kept, in iteration order (nil when some were not kept).
func (r *Recorder) Samples() []float64 {
	if r.dropped {
		return nil
	}
	return r.samples
}

// Summarize gives the Stats of xs with exact quantiles (nearest rank).
func Summarize(xs []float64) Stats {
	var mean, m2 float64
	lo, hi := math.NaN(), math.NaN()
	for i, v := range xs {
		d := v - mean
		mean += d / float64(i+1)
		m2 += d * (v - mean)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	s := moments(len(xs), mean, m2, lo, hi)
	s.From = "samples"
	if len(xs) == 0 {
		return s
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	q := func(p float64) Float {
		k := int(math.Ceil(p*float64(len(sorted)))) - 1
		return Float(sorted[max(0, min(k, len(sorted)-1))])
	}
	s.P50, s.P99, s.P999 = q(0.5), q(0.99), q(0.999)
	return s
}

// moments fills count, mean, sd (sample, n-1), normalized sd, min, max.
func moments(n int, mean, m2, lo, hi float64) Stats {
	nan := Float(math.NaN())
	s := Stats{Count: n, Mean: nan, SD: nan, NormalizedSD: nan, Min: nan, Max: nan, P50: nan, P99: nan, P999: nan}
	if n == 0 {
		return s
	}
	s.Mean, s.Min, s.Max = Float(mean), Float(lo), Float(hi)
	if n > 1 {
		sd := math.Sqrt(m2 / float64(n-1))
		s.SD = Float(sd)
		if mean > 0 {
			s.NormalizedSD = Float(sd / mean)
		}
	}
	return s
}
