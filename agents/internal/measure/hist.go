package measure

import "math"

// Hist is a log-bucketed histogram of durations in seconds: 16 buckets per
// factor of two from 100 ns to about 100 s (relative error under 4.4 %).
// The zero value is ready; it is not safe for concurrent use.
type Hist struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	mean   float64 // running mean and sum of squared deviations (Welford), for Std
	m2     float64
	under  uint64 // below histMin (includes negative: clock steps)
	max    float64
}

const (
	histMin     = 100e-9
	histPerOct  = 16
	histBuckets = 30 * histPerOct
)

// Add records v seconds.
func (h *Hist) Add(v float64) {
	h.n++
	h.sum += v
	d := v - h.mean
	h.mean += d / float64(h.n)
	h.m2 += d * (v - h.mean)
	if v > h.max {
		h.max = v
	}
	if v < histMin {
		h.under++
		return
	}
	i := int(math.Log2(v/histMin) * histPerOct)
	if i >= histBuckets {
		i = histBuckets - 1
	}
	h.counts[i]++
}

// Merge adds o's samples to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if o.n > 0 { // Chan et al.'s pairwise update of the mean and m2
		n := float64(h.n + o.n)
		d := o.mean - h.mean
		h.m2 += o.m2 + d*d*float64(h.n)*float64(o.n)/n
		h.mean += d * float64(o.n) / n
	}
	h.n += o.n
	h.sum += o.sum
	h.under += o.under
	if o.max > h.max {
		h.max = o.max
	}
}

// Count is the number of samples.
func (h *Hist) Count() uint64 { return h.n }

// Sum of the samples in seconds.
func (h *Hist) Sum() float64 { return h.sum }

// Mean in seconds (NaN when empty).
func (h *Hist) Mean() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.n)
}

// Std is the samples' standard deviation in seconds (n-1 in the
// denominator; NaN below two samples).
func (h *Hist) Std() float64 {
	if h.n < 2 {
		return math.NaN()
	}
	return math.Sqrt(h.m2 / float64(h.n-1))
}

// CI99 is the half-width of the 99 % confidence interval of the mean in
// seconds (normal approximation, z = 2.576: the counts here are in the
// thousands; NaN below two samples).
func (h *Hist) CI99() float64 {
	return 2.5758293035489 * h.Std() / math.Sqrt(float64(h.n))
}

// Quantile q (0..1) in seconds, the geometric middle of its bucket (NaN when empty).
func (h *Hist) Quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	acc := h.under
	if acc >= rank {
		return histMin
	}
	for i, c := range h.counts {
		acc += c
		if acc >= rank {
			v := histMin * math.Exp2((float64(i)+0.5)/histPerOct)
			return math.Min(v, h.max)
		}
	}
	return h.max
}

// Cumulative counts samples <= each bound (for a Prometheus histogram); a
// log bucket counts below a bound when its upper edge is.
func (h *Hist) Cumulative(bounds []float64) map[float64]uint64 {
	out := make(map[float64]uint64, len(bounds))
	for _, b := range bounds {
		acc := h.under
		for i, c := range h.counts {
			if histMin*math.Exp2(float64(i+1)/histPerOct) > b*(1+1e-9) {
				break
			}
			acc += c
		}
		out[b] = acc
	}
	return out
}

// Bucket is one non-empty bucket of a Hist: Count samples in (previous Le, Le].
type Bucket struct {
	Le    float64 `json:"le"`
	Count uint64  `json:"count"`
}

// Buckets are the non-empty buckets in increasing order (samples below
// 100 ns first, with Le 100 ns); their counts add up to Count().
func (h *Hist) Buckets() []Bucket {
	out := []Bucket{}
	if h.under > 0 {
		out = append(out, Bucket{Le: histMin, Count: h.under})
	}
	for i, c := range h.counts {
		if c > 0 {
			out = append(out, Bucket{Le: histMin * math.Exp2(float64(i+1)/histPerOct), Count: c})
		}
	}
	return out
}
