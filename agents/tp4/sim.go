package tp4

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Path is one direction of an in-memory link in virtual time: a
// serializing queue at RateBitsPerSecond (0: no serialization), a one-way
// Delay, and losses: each TPDU of n octets is lost with probability
// 1-(1-BER)^(8n), or Loss; a share Reorder is held back by up to
// ReorderDelay more (uniform); a share Duplicate arrives twice.
type Path struct {
	RateBitsPerSecond float64
	Delay             time.Duration
	BER               float64
	Loss              float64
	Reorder           float64
	ReorderDelay      time.Duration
	Duplicate         float64
	Overhead          int // octets per TPDU on the wire beyond the TPDU (serialization only)

	busy              time.Time
	sent, lost, duped uint64
}

// LossProbability is the chance that a TPDU of n octets is hit by at least
// one bit error at ber.
func LossProbability(ber float64, n int) float64 {
	if ber <= 0 {
		return 0
	}
	return -math.Expm1(float64(8*n) * math.Log1p(-ber))
}

// SimConfig is one simulated transfer.
type SimConfig struct {
	Sender, Receiver Config
	Forward, Reverse Path
	TSDUs, TSDUSize  int
	ExpeditedEvery   int
	LinkBitsPerSec   float64 // for the efficiency; 0: Forward's rate
	Seed             uint64
	Limit            time.Duration // virtual time limit (0: 1 h)
}

// SimResult is what a simulated transfer gave.
type SimResult struct {
	Completed  bool
	Elapsed    time.Duration
	Sender     SenderStats
	Receiver   ReceiverStats
	Meter      MeterStats
	Efficiency float64
	Lost       [2]uint64 // TPDUs lost on forward, reverse
	Duplicated [2]uint64
}

type simEvent struct {
	at  time.Time
	n   uint64
	to  int // 0 sender, 1 receiver
	tpd []byte
}

type simHeap []simEvent

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].n < h[j].n
	}
	return h[i].at.Before(h[j].at)
}
func (h simHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *simHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// SimEpoch is virtual time zero.
var SimEpoch = time.Unix(1_000_000_000, 0)

// Simulate runs one transfer between a Sender and a Receiver over two
// Paths in virtual time, with the Feeder as the sending user and a Meter
// as the receiving one. It is deterministic for a seed.
//
// Simulate stays one function: its event loop and transmit share the virtual clock, the heap and the seeded draws, whose order fixes the result.
func Simulate(c SimConfig) (SimResult, error) {
	var res SimResult
	s, err := NewSender(c.Sender)
	if err != nil {
		return res, fmt.Errorf("sender: %w", err)
	}
	r, err := NewReceiver(c.Receiver)
	if err != nil {
		return res, fmt.Errorf("receiver: %w", err)
	}
	if c.TSDUSize < MinTSDUSize {
		return res, fmt.Errorf("TSDU size %d: want >= %d", c.TSDUSize, MinTSDUSize)
	}
	limit := c.Limit
	if limit <= 0 {
		limit = time.Hour
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7470347470))
	meter := &Meter{Size: c.TSDUSize}
	r.OnTSDU, r.OnExpedited = meter.TSDU, meter.Expedited
	feed := &Feeder{TSDUs: c.TSDUs, Size: c.TSDUSize, Every: c.ExpeditedEvery}
	paths := [2]*Path{&c.Forward, &c.Reverse}
	var h simHeap
	var n uint64
	transmit := func(p *Path, to int, b []byte, now time.Time) {
		p.sent++
		dep := now
		if p.busy.After(dep) {
			dep = p.busy
		}
		if p.RateBitsPerSecond > 0 {
			dep = dep.Add(time.Duration(float64((len(b)+p.Overhead)*8) / p.RateBitsPerSecond * float64(time.Second)))
		}
		p.busy = dep
		if rng.Float64() < LossProbability(p.BER, len(b)) || rng.Float64() < p.Loss {
			p.lost++
			return
		}
		copies := 1
		if rng.Float64() < p.Duplicate {
			copies, p.duped = 2, p.duped+1
		}
		for range copies {
			at := dep.Add(p.Delay)
			if rng.Float64() < p.Reorder {
				at = at.Add(time.Duration(rng.Float64() * float64(p.ReorderDelay)))
			}
			n++
			heap.Push(&h, simEvent{at: at, n: n, to: to, tpd: b})
		}
	}
	now := SimEpoch
	s.Connect(now)
	steps := 0
	for {
		if err := feed.Feed(s, now); err != nil {
			return res, err
		}
		for b := s.Output(now); b != nil; b = s.Output(now) {
			transmit(paths[0], 1, b, now)
		}
		for b := r.Output(now); b != nil; b = r.Output(now) {
			transmit(paths[1], 0, b, now)
		}
		if s.Done() {
			break
		}
		next := s.Deadline(now)
		if d := r.Deadline(now); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
		if len(h) > 0 && (next.IsZero() || h[0].at.Before(next)) {
			next = h[0].at
		}
		if next.IsZero() {
			return res, errors.New("tp4 sim: nothing left to happen before the transfer ended")
		}
		if next.Sub(SimEpoch) > limit {
			break
		}
		if !next.After(now) {
			if steps++; steps > 1000 {
				act, i := s.pick(now)
				return res, fmt.Errorf("tp4 sim: no progress at %v (sender %v deadline %v act %d %d next send %v, receiver %v deadline %v)",
					now.Sub(SimEpoch), s.state, s.Deadline(now).Sub(SimEpoch), act, i, s.nextSend.Sub(SimEpoch), r.state, r.Deadline(now).Sub(SimEpoch))
			}
		} else {
			steps = 0
			now = next
		}
		for len(h) > 0 && !h[0].at.After(now) {
			e := heap.Pop(&h).(simEvent)
			if e.to == 0 {
				s.Input(e.tpd, now)
			} else {
				r.Input(e.tpd, now)
			}
		}
	}
	res.Elapsed = now.Sub(SimEpoch)
	res.Sender, res.Receiver, res.Meter = s.Stats(now), r.Stats(now), meter.Stats()
	link := c.LinkBitsPerSec
	if link <= 0 {
		link = c.Forward.RateBitsPerSecond
	}
	res.Efficiency = res.Meter.Efficiency(link)
	res.Lost = [2]uint64{c.Forward.lost, c.Reverse.lost}
	res.Duplicated = [2]uint64{c.Forward.duped, c.Reverse.duped}
	res.Completed = s.state == stClosed && res.Meter.TSDUs == c.TSDUs && res.Meter.Corrupt == 0 && res.Meter.OutOfOrder == 0
	if err := s.Err(); err != nil {
		return res, err
	}
	return res, nil
}
