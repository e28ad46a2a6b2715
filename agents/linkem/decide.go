package linkem

import (
	"math/rand/v2"
	"time"
)

// params is a validated Config compiled for the per-packet path. It is
// immutable once published: a PUT /config builds a new one and swaps a
// pointer, so every packet is decided under exactly one configuration.
type params struct {
	cfg        Config
	generation uint64

	delay, jitter int64 // ns
	dist          distFunc
	keepOrder     bool

	lossP     float64
	ge        GEModel
	geP, geR  float64
	geLossBad float64
	geLossGd  float64

	reorderP float64
	corruptP float64
	ber      BER
	dupP     float64
	limit    int

	needPayload bool
}

func compile(c Config, generation uint64) *params {
	c = c.Normalize()
	return &params{
		cfg:         c,
		generation:  generation,
		delay:       int64(c.Delay),
		jitter:      int64(c.Jitter),
		dist:        distribution(c.Distribution),
		keepOrder:   c.KeepOrder,
		lossP:       c.Loss.Prob(),
		ge:          c.LossGE,
		geP:         c.LossGE.P.Prob(),
		geR:         c.LossGE.R.Prob(),
		geLossBad:   c.LossGE.OneMinusH.Prob(),
		geLossGd:    c.LossGE.OneMinusK.Prob(),
		reorderP:    c.Reorder.Prob(),
		corruptP:    c.Corrupt.Prob(),
		ber:         c.BER,
		dupP:        c.Duplicate.Prob(),
		limit:       c.Limit,
		needPayload: c.needsPayload(),
	}
}

// Fate is what happens to one packet instance (an original or a
// duplicate).
type Fate uint8

// Fates.
const (
	FatePass     Fate = iota // forwarded, now or at Release
	FateDrop                 // lost by the loss model
	FateOverflow             // dropped: the held-packet limit was reached
)

func (f Fate) String() string {
	switch f {
	case FateDrop:
		return "drop"
	case FateOverflow:
		return "overflow"
	default:
		return "pass"
	}
}

// Decision is the fate of one packet instance.
type Decision struct {
	Fate      Fate
	Release   int64 // ns on the emulator clock; <= arrival means at once
	Reordered bool  // sent at once by the reorder rule
	Corrupt   bool
	// FlipBit is the bit (counted from the first bit of the IP packet) to
	// invert when Corrupt is set; -1 if the packet has no byte past its IP
	// header to corrupt.
	FlipBit int
}

// Decider draws the per-packet decisions. It owns the random source and
// the model state (Gilbert-Elliott state, last release time for
// keep-order), and is used by one goroutine at a time.
//
// The draws for each packet are made in a fixed order, and only for the
// impairments that are configured, so a given seed, configuration and
// packet sequence always give the same decisions:
//
//  1. duplicate (one draw, if duplicate > 0);
//  2. loss: one draw for random loss, or two for Gilbert-Elliott (state
//     transition, then loss in the state the packet arrived in);
//  3. corruption (one draw if corrupt or ber is set; one more for the bit
//     to flip when corrupted);
//  4. limit check (no draw);
//  5. reorder (one draw, if reorder > 0), else jitter (one draw, if
//     jitter > 0).
//
// A duplicate's own decision (steps 2-5, never duplicated again) is drawn
// right after its original's.
type Decider struct {
	rng         *rand.Rand
	geBad       bool
	geWasOn     bool
	lastRelease int64
}

// NewDecider returns a Decider whose random source is PCG seeded with seed.
func NewDecider(seed uint64) *Decider {
	return &Decider{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Decide returns the fate of an arriving packet of pktLen bytes whose IP
// header is hdrLen bytes long, given the number of packets already held,
// and whether (and how) a duplicate of it goes out too.
//
// Loss and duplication combine as in netem: a packet drawn both lost and
// duplicated is delivered once; one drawn duplicated and not lost is
// delivered, and so is a copy that gets its own loss, corruption, limit
// and delay decisions.
func (d *Decider) Decide(p *params, now int64, pktLen, hdrLen, held int) (orig Decision, dup Decision, hasDup bool) {
	duplicated := p.dupP > 0 && d.rng.Float64() < p.dupP
	lost := d.lost(p)
	switch {
	case lost && !duplicated:
		return Decision{Fate: FateDrop, FlipBit: -1}, Decision{}, false
	case lost && duplicated:
		// netem: count = 1 + 1 - 1: the packet goes out once.
		duplicated = false
	}
	orig = d.rest(p, now, pktLen, hdrLen, held)
	if !duplicated {
		return orig, Decision{}, false
	}
	if orig.Fate == FatePass && orig.Release > now {
		held++
	}
	if d.lost(p) {
		return orig, Decision{Fate: FateDrop, FlipBit: -1}, true
	}
	return orig, d.rest(p, now, pktLen, hdrLen, held), true
}

// lost runs the loss model for one packet.
func (d *Decider) lost(p *params) bool {
	if !p.ge.Enabled {
		d.geWasOn = false
		return p.lossP > 0 && d.rng.Float64() < p.lossP
	}
	if !d.geWasOn {
		// A (re)enabled model starts in the good state, as netem's does.
		d.geWasOn, d.geBad = true, false
	}
	u1, u2 := d.rng.Float64(), d.rng.Float64()
	if !d.geBad {
		d.geBad = u1 < p.geP
		return u2 < p.geLossGd
	}
	d.geBad = !(u1 < p.geR)
	return u2 < p.geLossBad
}

// rest decides corruption, limit and timing of a packet that is not lost.
func (d *Decider) rest(p *params, now int64, pktLen, hdrLen, held int) Decision {
	dec := Decision{Fate: FatePass, FlipBit: -1}
	cp := p.corruptP
	if p.ber > 0 {
		cp = p.ber.PacketProb(pktLen)
	}
	if cp > 0 && d.rng.Float64() < cp {
		dec.Corrupt = true
		if bits := (pktLen - hdrLen) * 8; bits > 0 {
			dec.FlipBit = hdrLen*8 + d.rng.IntN(bits)
		}
	}
	if held >= p.limit {
		return Decision{Fate: FateOverflow, FlipBit: -1}
	}
	if p.reorderP > 0 && d.rng.Float64() < p.reorderP {
		dec.Reordered = true
		dec.Release = now
		return dec
	}
	delay := p.delay
	if p.jitter > 0 {
		delay += int64(float64(p.jitter) * p.dist(d.rng))
		if delay < 0 {
			delay = 0
		}
	}
	if delay > int64(MaxHold) {
		delay = int64(MaxHold)
	}
	rel := now + delay
	if p.keepOrder && rel < d.lastRelease {
		rel = d.lastRelease
	}
	if rel > d.lastRelease {
		d.lastRelease = rel
	}
	dec.Release = rel
	return dec
}

// AddedDelay is the delay a Decision adds to a packet arriving at now.
func (dec Decision) AddedDelay(now int64) time.Duration {
	if dec.Release <= now {
		return 0
	}
	return time.Duration(dec.Release - now)
}
