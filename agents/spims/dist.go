package spims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Unit of a distribution's values: sizes are bytes (JSON numbers), times
// are durations (JSON strings with a unit, "1ms").
type Unit int

const (
	Bytes Unit = iota
	Seconds
)

// Distribution names (SPIMS appendix B: constant, uniform, normal,
// exponential, bivalue).
const (
	DistConstant    = "constant"
	DistUniform     = "uniform"
	DistNormal      = "normal"
	DistExponential = "exponential"
	DistBivalue     = "bivalue"
)

// distParams are the parameters each distribution takes, in JSON.
var distParams = map[string][]string{
	DistConstant:    {"value"},
	DistUniform:     {"min", "max"},
	DistNormal:      {"mean", "sd"},
	DistExponential: {"mean"},
	DistBivalue:     {"value", "value2", "p"},
}

// Dist draws sizes (bytes) or times (seconds). Values are clamped at 0;
// normal and exponential draws are unbounded above (callers clamp sizes
// to what a message may carry).
//
//   - constant: value
//   - uniform: min..max (sizes: every integer equally likely)
//   - normal: mean, sd (truncated at 0)
//   - exponential: mean
//   - bivalue: value with probability p, else value2 (SPIMS's bimodal
//     message sizes)
type Dist struct {
	Kind string
	A, B float64 // value/min/mean, value2/max/sd
	P    float64 // bivalue: probability of A
	Unit Unit
}

// ParseDist reads {"dist": "...", params} with values in unit. Unknown or
// missing parameters are errors that name the ones expected.
func ParseDist(raw json.RawMessage, unit Unit) (Dist, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil || m == nil {
		return Dist{}, fmt.Errorf(`want an object such as {"dist": "constant", "value": %s}`, example(unit))
	}
	var kind string
	if err := json.Unmarshal(m["dist"], &kind); err != nil {
		return Dist{}, fmt.Errorf(`"dist": want one of constant, uniform, normal, exponential, bivalue`)
	}
	want, ok := distParams[kind]
	if !ok {
		return Dist{}, fmt.Errorf("dist %q: want one of constant, uniform, normal, exponential, bivalue", kind)
	}
	delete(m, "dist")
	vals := map[string]float64{}
	for _, name := range want {
		r, ok := m[name]
		if !ok {
			return Dist{}, fmt.Errorf("%s takes %s: %q missing", kind, strings.Join(want, ", "), name)
		}
		delete(m, name)
		u := unit
		if name == "p" {
			u = -1
		}
		v, err := parseValue(r, u)
		if err != nil {
			return Dist{}, fmt.Errorf("%s %s: %w", kind, name, err)
		}
		vals[name] = v
	}
	for name := range m {
		return Dist{}, fmt.Errorf("%s takes %s, not %q", kind, strings.Join(want, ", "), name)
	}
	d := Dist{Kind: kind, Unit: unit}
	switch kind {
	case DistConstant:
		d.A = vals["value"]
	case DistUniform:
		d.A, d.B = vals["min"], vals["max"]
		if d.B < d.A {
			return Dist{}, fmt.Errorf("uniform: max %v below min %v", d.B, d.A)
		}
	case DistNormal:
		d.A, d.B = vals["mean"], vals["sd"]
	case DistExponential:
		d.A = vals["mean"]
	case DistBivalue:
		d.A, d.B, d.P = vals["value"], vals["value2"], vals["p"]
		if d.P < 0 || d.P > 1 {
			return Dist{}, fmt.Errorf("bivalue p %v: a probability, 0..1", d.P)
		}
	}
	return d, nil
}

func example(u Unit) string {
	if u == Seconds {
		return `"1ms"`
	}
	return "32"
}

// parseValue reads a byte count (a number >= 0), a duration string (>= 0)
// or, for unit -1, a plain number.
func parseValue(r json.RawMessage, u Unit) (float64, error) {
	switch u {
	case Seconds:
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return 0, fmt.Errorf("want a duration string with its unit, e.g. \"1ms\", not %s", r)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("want a duration >= 0 with its unit, e.g. \"1ms\", not %q", s)
		}
		return d.Seconds(), nil
	default:
		var f float64
		if err := json.Unmarshal(r, &f); err != nil {
			return 0, fmt.Errorf("want a number, not %s", r)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || (u == Bytes && f < 0) {
			return 0, fmt.Errorf("want a number >= 0, not %v", f)
		}
		return f, nil
	}
}

// Const is a constant distribution.
func Const(v float64, u Unit) Dist { return Dist{Kind: DistConstant, A: v, Unit: u} }

// Sample draws one value (>= 0).
func (d Dist) Sample(r *rand.Rand) float64 {
	var v float64
	switch d.Kind {
	case DistConstant:
		v = d.A
	case DistUniform:
		if d.Unit == Bytes {
			lo, hi := math.Ceil(d.A), math.Floor(d.B)
			if hi < lo {
				return lo
			}
			return lo + float64(r.Int64N(int64(hi-lo)+1))
		}
		v = d.A + (d.B-d.A)*r.Float64()
	case DistNormal:
		v = d.A + d.B*r.NormFloat64()
	case DistExponential:
		v = d.A * r.ExpFloat64()
	case DistBivalue:
		v = d.B
		if r.Float64() < d.P {
			v = d.A
		}
	}
	return math.Max(0, v)
}

// Size draws a size in bytes, at most max.
func (d Dist) Size(r *rand.Rand, max int) int {
	return int(math.Min(math.Round(d.Sample(r)), float64(max)))
}

// Duration draws a time.
func (d Dist) Duration(r *rand.Rand) time.Duration {
	return time.Duration(d.Sample(r) * float64(time.Second))
}

// Max is the largest value the distribution draws (+Inf for normal and
// exponential with a spread).
func (d Dist) Max() float64 {
	switch d.Kind {
	case DistUniform:
		return d.B
	case DistBivalue:
		return math.Max(d.A, d.B)
	case DistNormal:
		if d.B == 0 {
			return d.A
		}
		return math.Inf(1)
	case DistExponential:
		if d.A == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return d.A
}

// Mean is the distribution's mean before clamping at 0.
func (d Dist) Mean() float64 {
	switch d.Kind {
	case DistUniform:
		return (d.A + d.B) / 2
	case DistBivalue:
		return d.P*d.A + (1-d.P)*d.B
	}
	return d.A
}

// String is the distribution as in a manifest: "uniform(min=10, max=100 bytes)".
func (d Dist) String() string {
	f := func(v float64) string {
		if d.Unit == Seconds {
			return time.Duration(v * float64(time.Second)).String()
		}
		return fmt.Sprintf("%g", v)
	}
	unit := ""
	if d.Unit == Bytes {
		unit = " bytes"
	}
	switch d.Kind {
	case DistUniform:
		return fmt.Sprintf("uniform(min=%s, max=%s%s)", f(d.A), f(d.B), unit)
	case DistNormal:
		return fmt.Sprintf("normal(mean=%s, sd=%s%s)", f(d.A), f(d.B), unit)
	case DistExponential:
		return fmt.Sprintf("exponential(mean=%s%s)", f(d.A), unit)
	case DistBivalue:
		return fmt.Sprintf("bivalue(value=%s, value2=%s%s, p=%g)", f(d.A), f(d.B), unit, d.P)
	}
	return fmt.Sprintf("constant(%s%s)", f(d.A), unit)
}

// newRand is the seeded generator of one stream of draws.
func newRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}
