package linkem

import (
	"math"
	"math/rand/v2"
)

// The jitter distributions reproduce the tables that iproute2 generates for
// netem (normal.c, pareto.c, paretonormal.c): a draw t is a dimensionless
// value and the delay is delay + jitter*t, clamped at 0. netem stores t in
// a signed 16-bit table scaled by 8192, so every t lies in [-4, 4); the
// same clamp is applied here.
//
//   - uniform: t uniform in [-1, 1): the delay is uniform in
//     [delay-jitter, delay+jitter); mean delay, sd jitter/sqrt(3).
//   - normal: t standard normal truncated to [-4, 4]; mean delay, sd jitter.
//   - pareto: t = (4/3)(X-1.5) with X Pareto(x_m=1, alpha=3) (mean 1.5), so
//     t >= -2/3; capped at t=4 like netem's table. Mean
//     delay-0.0329*jitter, sd 0.821*jitter (the cap removes the heavy
//     tail that would give sd 1.155*jitter).
//   - paretonormal: t = (N + 3*P)/4 with N the normal and P the pareto
//     value taken at the same quantile (netem's table is built that way);
//     t >= -1.5, mean delay-0.0247*jitter, sd 0.835*jitter.
const distClamp = 4.0

// distMaxT is the largest t each distribution can draw; it bounds the
// longest delay a configuration can produce.
var distMaxT = map[string]float64{
	DistUniform:      1,
	DistNormal:       distClamp,
	DistPareto:       distClamp,
	DistParetoNormal: distClamp,
}

// distFunc draws one t value.
type distFunc func(r *rand.Rand) float64

func distribution(name string) distFunc {
	switch name {
	case DistNormal:
		return drawNormal
	case DistPareto:
		return drawPareto
	case DistParetoNormal:
		return drawParetoNormal
	default:
		return drawUniform
	}
}

func clampT(t float64) float64 {
	if t > distClamp {
		return distClamp
	}
	if t < -distClamp {
		return -distClamp
	}
	return t
}

func drawUniform(r *rand.Rand) float64 { return 2*r.Float64() - 1 }

func drawNormal(r *rand.Rand) float64 { return clampT(r.NormFloat64()) }

func drawPareto(r *rand.Rand) float64 { return paretoQuantile(r.Float64()) }

func drawParetoNormal(r *rand.Rand) float64 { return paretoNormalQuantile(r.Float64()) }

// paretoQuantile is netem's pareto t at quantile q in [0, 1).
func paretoQuantile(q float64) float64 {
	x := math.Pow(1-q, -1.0/3) // Pareto(1, 3) at quantile q
	return math.Min((x-1.5)*4/3, distClamp)
}

// normalQuantile is the standard normal quantile, clamped like netem's
// table.
func normalQuantile(q float64) float64 {
	return clampT(math.Sqrt2 * math.Erfinv(2*q-1))
}

// paretoNormalQuantile is netem's paretonormal t at quantile q.
func paretoNormalQuantile(q float64) float64 {
	return clampT((normalQuantile(q) + 3*paretoQuantile(q)) / 4)
}
