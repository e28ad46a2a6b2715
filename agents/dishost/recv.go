package dishost

import (
	"time"

	"protolab/agents/dis"
	"protolab/agents/internal/measure"
	"protolab/agents/syntax"
)

// Drop reasons of the receiver.
const (
	DropShort     = "short"     // shorter than a message address + DIS header
	DropHeader    = "header"    // DIS header unreadable or length beyond the datagram
	DropDecode    = "decode"    // the PDU does not decode
	DropPadding   = "padding"   // bytes after the PDU are not zero
	DropUnwanted  = "unwanted"  // message address of a group this host did not join
	DropUnstamped = "unstamped" // relative (non-absolute) DIS timestamp: no delay sample
)

// DropReasons lists every reason, for metrics.
var DropReasons = []string{DropShort, DropHeader, DropDecode, DropPadding, DropUnwanted, DropUnstamped}

// DropSyntaxPrefix + a syntax.Reason names a datagram a transfer syntax
// (--syntax other than raw) could not decode, e.g. "syntax-malformed".
const DropSyntaxPrefix = "syntax-"

// Stats are one receiver's counters.
type Stats struct {
	Packets  uint64 // datagrams read
	Messages uint64 // messages decoded and accepted
	Bytes    uint64 // UDP payload bytes read
	Dropped  map[string]uint64
	ByType   map[dis.PDUType]uint64
	Delay    measure.Hist // one-way delay from the PDU's timestamp to its delivery (decoded)
	// Leaves sums the composition of the messages accepted: integers,
	// reals and octet strings of the DIS v6 ASN.1 module (syntax.Compose).
	Leaves syntax.Composition
	// Decode times each accepted message's decoding when the processor
	// has a clock (the transfer syntax's, or raw's dis.Decoder).
	Decode measure.Hist
	// Skinny counts the skinny syntax's matched and fallback decodes.
	Skinny syntax.Stats
}

func newStats() Stats {
	return Stats{Dropped: map[string]uint64{}, ByType: map[dis.PDUType]uint64{}}
}

// Merge adds o to s.
func (s *Stats) Merge(o *Stats) {
	s.Packets += o.Packets
	s.Messages += o.Messages
	s.Bytes += o.Bytes
	for k, v := range o.Dropped {
		s.Dropped[k] += v
	}
	for k, v := range o.ByType {
		s.ByType[k] += v
	}
	s.Delay.Merge(&o.Delay)
	s.Decode.Merge(&o.Decode)
	s.Leaves.Add(o.Leaves)
	s.Skinny.Matched += o.Skinny.Matched
	s.Skinny.Fallback += o.Skinny.Fallback
}

// Processor decodes received datagrams. One per receiving goroutine; it is
// not safe for concurrent use and does not allocate per datagram.
type Processor struct {
	plan     Plan
	joined   int // groups 0..joined-1 are wanted
	dec      dis.Decoder
	codec    syntax.Codec // nil: raw (the native path below)
	Stats    Stats
	entities map[dis.EntityID]time.Time
	Timeouts uint64
	lastScan time.Time
	First    time.Time // first datagram
	Last     time.Time // last datagram

	extraWork int // Receiver.ExtraWork
	// clock, when set, reads the delivery time a delay ends at (after the
	// decode, so a transfer syntax's decoding is inside the delay); nil:
	// the read time passed to Process (tests).
	clock  func() time.Time
	leaves map[leafKey]syntax.Composition // composition per type and record count, counted once
	sink   uint64                         // keeps the extra work from being optimized away
}

// NewProcessor returns a processor accepting groups 0..joined-1 of plan.
func NewProcessor(plan Plan, joined int) *Processor {
	return &Processor{plan: plan, joined: joined, Stats: newStats(), entities: map[dis.EntityID]time.Time{},
		leaves: map[leafKey]syntax.Composition{}}
}

// SetSyntax makes p decode PDUs in the named transfer syntax ("" or "raw":
// the native encoding).
func (p *Processor) SetSyntax(name string) error {
	c, err := newCodec(name)
	p.codec = c
	return err
}

// Process handles one datagram received at now and reports whether it was
// accepted. A datagram it cannot use is a counted drop, never an error.
func (p *Processor) Process(b []byte, now time.Time) bool {
	if p.Stats.Packets == 0 {
		p.First = now
	}
	p.Last = now
	p.Stats.Packets++
	p.Stats.Bytes += uint64(len(b))
	if len(b) < dis.MessageAddressSize+dis.HeaderSize {
		p.Stats.Dropped[DropShort]++
		return false
	}
	a := dis.MessageAddress(uint16(b[0])<<8 | uint16(b[1]))
	pdu := b[dis.MessageAddressSize:]
	var h dis.Header
	var msg dis.PDU
	var t0 time.Time
	if p.clock != nil {
		t0 = p.clock()
	}
	if p.codec != nil {
		var err error
		msg, err = p.codec.Decode(pdu)
		p.Stats.Skinny = p.codec.Stats()
		if err != nil {
			p.Stats.Dropped[DropSyntaxPrefix+syntax.Reason(err)]++
			return false
		}
		h = *syntax.HeaderOf(msg)
	} else {
		var err error
		h, err = dis.PeekHeader(pdu)
		if err != nil || int(h.Length) > len(pdu) || int(h.Length) < dis.HeaderSize {
			p.Stats.Dropped[DropHeader]++
			return false
		}
		for _, c := range pdu[h.Length:] {
			if c != 0 {
				p.Stats.Dropped[DropPadding]++
				return false
			}
		}
		pdu = pdu[:h.Length]
		if msg, err = p.dec.Decode(pdu); err != nil {
			p.Stats.Dropped[DropDecode]++
			return false
		}
	}
	if g := p.plan.PacketAddress(a); g >= p.joined {
		p.Stats.Dropped[DropUnwanted]++
		return false
	}
	delivered := now
	if p.clock != nil {
		delivered = p.clock()
		p.Stats.Decode.Add(delivered.Sub(t0).Seconds())
	}
	p.Stats.Messages++
	p.Stats.ByType[h.PDUType]++
	p.countLeaves(h, msg)
	if p.extraWork > 0 {
		p.sink += burn(pdu, p.extraWork)
	}
	if es, ok := msg.(*dis.EntityStatePDU); ok {
		p.entities[es.EntityID] = now
	}
	since, abs := dis.TimestampDuration(h.Timestamp)
	if !abs {
		p.Stats.Dropped[DropUnstamped]++
	} else {
		d := time.Duration(delivered.UnixNano())%time.Hour - since
		if d < -30*time.Minute { // the hour turned between send and receive
			d += time.Hour
		}
		p.Stats.Delay.Add(d.Seconds())
	}
	if now.Sub(p.lastScan) >= time.Second {
		p.Expire(now)
	}
	return true
}

// leafKey identifies a PDU's composition: its type and length (the
// length tells the variable records apart).
type leafKey struct {
	t   dis.PDUType
	len uint16
}

// countLeaves adds msg's composition to the stats, walking each distinct
// (type, length) once.
func (p *Processor) countLeaves(h dis.Header, msg dis.PDU) {
	k := leafKey{h.PDUType, uint16(msg.Len())}
	c, ok := p.leaves[k]
	if !ok {
		c = syntax.Compose(msg)
		p.leaves[k] = c
	}
	p.Stats.Leaves.Add(c)
}

// Expire removes entities silent for EntityTimeout, counting them.
func (p *Processor) Expire(now time.Time) {
	p.lastScan = now
	for id, t := range p.entities {
		if now.Sub(t) >= EntityTimeout {
			delete(p.entities, id)
			p.Timeouts++
		}
	}
}

// Entities is the number of live entities.
func (p *Processor) Entities() int { return len(p.entities) }

// burn hashes b rounds times (FNV-1a): the CPU cost of Receiver.ExtraWork.
func burn(b []byte, rounds int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < rounds; i++ {
		for _, c := range b {
			h ^= uint64(c)
			h *= 1099511628211
		}
	}
	return h
}

// CheckSyntax reports whether name is a transfer syntax this binary can use.
func CheckSyntax(name string) error {
	_, err := newCodec(name)
	return err
}
