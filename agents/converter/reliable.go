package converter

import (
	"time"

	"protolab/agents/bundle"
)

// Reliable local delivery of priority messages (thesis sec. 3.4.2: "the
// converter and hosts can track it and send acknowledgments even though UDP
// is an unreliable protocol"), on with --reliable at C_2 and the hosts.
//
// A bundle that carries priority messages ends with a CtlSeq control message:
// its sender's sequence number (toward the hosts, its interest bits are the
// hosts that were sent a priority message). Its receiver acknowledges the
// number with a CtlRAck in its next bundle. What is not acknowledged within
// the retransmission timeout goes again, its priority messages only, in a
// bundle of its own under the same number (toward the hosts, only to the hosts
// still owing an acknowledgement), at most reliableTries times in all; then
// its messages count as dropped (gave_up). The timeout doubles with each
// sending (RFC 6298 sec. 5.5), up to maxRTO: a receiver or a link stalled for
// a few hundred milliseconds (a busy 2-core machine, a userspace link
// emulator) costs a few retransmissions, not a give-up. A receiver hands up the messages of
// a number once: a repeat is acknowledged again and its messages counted as
// duplicates. Wide-area delivery stays unreliable, as in the thesis.

// Drop reason of priority messages never acknowledged.
const DropGaveUp = "gave_up"

const (
	reliableTries = 6                      // first sending included
	maxRTO        = 500 * time.Millisecond // the doubled timeout's ceiling
	seenFor       = 4 * time.Second        // how long a receiver remembers a number: longer than all tries
)

// RTO is the retransmission timeout for a bundling interval: the bundle and
// its acknowledgement each wait up to one interval at the other end.
func RTO(interval time.Duration) time.Duration {
	return max(4*interval, 20*time.Millisecond)
}

// relMsg is a priority message kept for retransmission: its address (toward
// C_2) or interest bits (toward the hosts) and a copy of its payload.
type relMsg struct {
	addr    uint16
	mask    bundle.Mask
	payload []byte
}

type pending struct {
	msgs  []relMsg
	owe   bundle.Mask // who has not acknowledged (bit 1 for C_2)
	sent  time.Time
	wait  time.Duration // the timeout of the latest sending
	tries int
}

// outbox holds one sender's unacknowledged priority bundles.
type outbox struct {
	seq   uint32
	cur   []relMsg // priority messages of the bundle being built
	open  map[uint32]*pending
	rto   time.Duration
	order []uint32 // numbers in sending order, for a stable retransmission order
}

func newOutbox(interval time.Duration) *outbox {
	return &outbox{open: map[uint32]*pending{}, rto: RTO(interval)}
}

// keep copies a priority message going into the current bundle.
func (o *outbox) keep(addr uint16, m bundle.Mask, p []byte) {
	o.cur = append(o.cur, relMsg{addr: addr, mask: m, payload: append([]byte(nil), p...)})
}

// close numbers the current bundle's priority messages (none: 0, no CtlSeq),
// owed by `owe`.
func (o *outbox) close(owe bundle.Mask, now time.Time) uint32 {
	if len(o.cur) == 0 {
		return 0
	}
	o.seq++
	if o.seq == 0 {
		o.seq = 1
	}
	o.open[o.seq] = &pending{msgs: o.cur, owe: owe, sent: now, wait: o.rto, tries: 1}
	o.order = append(o.order, o.seq)
	o.cur = nil
	return o.seq
}

// ack clears the acknowledging peer's bit of a number; when no peer owes it
// any more, it returns how many sendings the number took (else 0).
func (o *outbox) ack(seq uint32, from bundle.Mask) (sendings int) {
	if p, ok := o.open[seq]; ok {
		p.owe &^= from
		if p.owe == 0 {
			delete(o.open, seq)
			return p.tries
		}
	}
	return 0
}

// due calls resend for each number whose timeout has passed (its messages,
// the peers still owing) and doubles its timeout; it gives up after
// reliableTries, returning the number of messages given up.
func (o *outbox) due(now time.Time, resend func(seq uint32, p *pending)) (gaveUp int) {
	kept := o.order[:0]
	for _, seq := range o.order {
		p, ok := o.open[seq]
		if !ok {
			continue
		}
		if now.Sub(p.sent) >= p.wait {
			if p.tries >= reliableTries {
				delete(o.open, seq)
				gaveUp += len(p.msgs)
				continue
			}
			p.tries++
			p.sent = now
			p.wait = min(2*p.wait, maxRTO)
			resend(seq, p)
		}
		kept = append(kept, seq)
	}
	o.order = kept
	return gaveUp
}

// seen remembers the numbers a receiver has handed up, per sender.
type seen struct {
	at    map[uint32]time.Time
	prune time.Time
}

// first reports whether seq is new (and remembers it).
func (s *seen) first(seq uint32, now time.Time) bool {
	if s.at == nil {
		s.at = map[uint32]time.Time{}
	}
	if _, ok := s.at[seq]; ok {
		return false
	}
	s.at[seq] = now
	if now.Sub(s.prune) > seenFor/4 {
		for k, t := range s.at {
			if now.Sub(t) > seenFor {
				delete(s.at, k)
			}
		}
		s.prune = now
	}
	return true
}

// lastSeq is a bundle's closing CtlSeq (ok false when it has none). toHosts
// says which format: interest bits (returned as m) or an address before each
// message.
func lastSeq(r *bundle.Reader, toHosts bool) (c bundle.Control, m bundle.Mask, ok bool) {
	msg := r.Last()
	head := bundle.AddrBytes
	if toHosts {
		head = 2 * r.Words()
	}
	if len(msg) != head+ctlPayload || msg[head] != bundle.CtlSeq {
		return c, 0, false
	}
	if toHosts {
		m = bundle.ReadMask(msg, r.Words())
	} else if msg[0] != 0xFF || msg[1] != 0xFF {
		return c, 0, false
	}
	c, err := bundle.ParseControl(msg[head:])
	return c, m, err == nil
}
