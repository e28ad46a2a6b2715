package measure

import (
	"fmt"
	"math"
	"math/rand"
	"time"
)

// Arrival is the inter-arrival process of a Pacer.
type Arrival string

const (
	Constant Arrival = "constant"
	Poisson  Arrival = "poisson"
)

// Pacer gives the send times of a constant or Poisson process.
type Pacer struct {
	start   time.Time
	rate    float64
	arrival Arrival
	rng     *rand.Rand
	offset  float64 // seconds from start of the next arrival
}

// NewPacer returns a pacer of rate messages/s starting at start.
func NewPacer(rate float64, arrival Arrival, start time.Time, seed int64) (*Pacer, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate must be > 0 messages/s, not %v", rate)
	}
	if arrival != Constant && arrival != Poisson {
		return nil, fmt.Errorf("arrival %q: constant or poisson", arrival)
	}
	p := &Pacer{start: start, rate: rate, arrival: arrival, rng: rand.New(rand.NewSource(seed))}
	return p, nil
}

// Due returns how many arrivals are due at now (at most max), consuming them.
func (p *Pacer) Due(now time.Time, max int) int {
	el := now.Sub(p.start).Seconds()
	n := 0
	for n < max && p.offset <= el {
		n++
		if p.arrival == Poisson {
			p.offset += p.rng.ExpFloat64() / p.rate
		} else {
			p.offset += 1 / p.rate
		}
	}
	return n
}

// NextAt is the time of the next arrival.
func (p *Pacer) NextAt() time.Time {
	return p.start.Add(time.Duration(p.offset * float64(time.Second)))
}
