package transport

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/logging"

	"protolab/agents/internal/measure"
)

// rxHeld is what a QUIC receiver holds for its application: stream octets
// received (each octet once, however often it was sent) and not yet read,
// summed over the connection's streams, as a time-weighted level. It is
// the QUIC counterpart of TCP's receive queue and of tp4's receive buffer
// (the satellite seed's Table 1: average and maximum receive-buffer use).
// quic-go reports no such figure; it is counted here from the STREAM frames
// of each packet the tracer sees and from the application's reads. The
// tracer runs after quic-go has queued a packet's frames, so a read may
// come first: received data is clipped at the read offset, and the level
// never goes below zero.
type rxHeld struct {
	mu      sync.Mutex
	streams map[quic.StreamID]*rxStream
	level   measure.Level
}

// rxStream is one stream's read offset and the spans received above it
// (disjoint, sorted).
type rxStream struct {
	read int64
	got  []rxSpan
}

type rxSpan struct{ lo, hi int64 }

func newRxHeld() *rxHeld { return &rxHeld{streams: map[quic.StreamID]*rxStream{}} }

func (s *rxStream) held() int64 {
	var h int64
	for _, g := range s.got {
		h += g.hi - max(g.lo, s.read)
	}
	return h
}

// add records [lo, hi) received.
func (s *rxStream) add(lo, hi int64) {
	lo = max(lo, s.read)
	if hi <= lo {
		return
	}
	i := sort.Search(len(s.got), func(i int) bool { return s.got[i].hi >= lo })
	j := i
	for j < len(s.got) && s.got[j].lo <= hi {
		lo, hi = min(lo, s.got[j].lo), max(hi, s.got[j].hi)
		j++
	}
	s.got = slices.Replace(s.got, i, j, rxSpan{lo, hi})
}

// consume records n octets read.
func (s *rxStream) consume(n int64) {
	s.read += n
	k := 0
	for k < len(s.got) && s.got[k].hi <= s.read {
		k++
	}
	s.got = slices.Delete(s.got, 0, k)
}

// update applies f to stream id's record and moves the level by the change.
func (r *rxHeld) update(id quic.StreamID, f func(*rxStream)) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.streams[id]
	if s == nil {
		s = &rxStream{}
		r.streams[id] = s
	}
	before := s.held()
	f(s)
	r.level.Add(now, int(s.held()-before))
}

// frames is the tracer's hook for a received packet.
func (r *rxHeld) frames(fs []logging.Frame) {
	for _, f := range fs {
		if sf, ok := f.(*logging.StreamFrame); ok && sf.Length > 0 {
			lo := int64(sf.Offset)
			r.update(sf.StreamID, func(s *rxStream) { s.add(lo, lo+int64(sf.Length)) })
		}
	}
}

// read is the application's hook: n octets of stream id read.
func (r *rxHeld) read(id quic.StreamID, n int) {
	if n > 0 {
		r.update(id, func(s *rxStream) { s.consume(int64(n)) })
	}
}

// counters puts the level's figures in m as counters that only grow, so
// that increments over an interval still mean something: the integral in
// octet-microseconds and its span in microseconds (their ratio is the time
// average), and the maximum in octets.
func (r *rxHeld) counters(m map[string]uint64) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	m["rx_held_octet_microseconds"] = uint64(r.level.Integral(now)*1e6 + 0.5)
	m["rx_held_microseconds"] = uint64(r.level.Span(now).Microseconds())
	m["rx_held_max_octets"] = uint64(r.level.Max)
}

// rxRegistry finds a connection's rxHeld from its tracing ID (quic-go
// puts it in the context of the tracer's constructor and of the
// connection).
type rxRegistry struct{ m sync.Map }

func (g *rxRegistry) tracer(ctx context.Context) (*rxHeld, func()) {
	r := newRxHeld()
	id, ok := ctx.Value(quic.ConnectionTracingKey).(quic.ConnectionTracingID)
	if !ok {
		return r, func() {}
	}
	g.m.Store(id, r)
	return r, func() { g.m.Delete(id) }
}

// of is qc's rxHeld (nil when its tracer did not register one).
func (g *rxRegistry) of(qc quic.Connection) *rxHeld {
	id, ok := qc.Context().Value(quic.ConnectionTracingKey).(quic.ConnectionTracingID)
	if !ok {
		return nil
	}
	r, _ := g.m.Load(id)
	h, _ := r.(*rxHeld)
	return h
}
