package converter

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"protolab/agents/bundle"
)

// Central is C_2's state and logic, free of sockets: bundles in (From*),
// bundles out through Send, at Tick. One goroutine drives it.
type Central struct {
	cfg  *Config
	st   *Stats
	db   bundle.DB
	Send func(b []byte, to netip.AddrPort)

	c1      map[netip.AddrPort]int // C_1 address -> number 1..n
	hosts   map[netip.AddrPort]int // host interface address -> host id (learnt from its joins)
	maxHost int

	toHosts  bundle.Writer
	hostBuf  []byte
	arrivals []time.Time // of the messages in toHosts
	words    int

	toC1   []bundle.Writer // index 1..n
	c1Buf  [][]byte
	ctlBuf []byte
	// the outbound path (cfg.Outbound): when each outward message in toC1[n]
	// arrived, and the messages each C_1 was given to send out
	c1Arrivals [][]time.Time
	outLoad    []uint64

	ready    [bundle.Groups]bool  // a C_1 has joined the packet address
	waiting  [bundle.Groups][]ack // host joins to acknowledge once it has (one per host)
	c1Seq    uint32
	c1Joins  map[uint32]c1Join // unacknowledged joins sent to C_1s
	lastSent time.Time

	// reliable mode (nil without): C_2's numbered priority bundles toward
	// the hosts, and the numbers each host's bundles have brought
	rel     *outbox
	seenOf  map[int]*seen
	bulkBuf []byte
	resend  bundle.Writer

	// congestion: C_2's own bytes toward the hosts per window
	winStart time.Time
	winBytes int
	level    int
}

type ack struct {
	host int
	seq  uint32
}

type c1Join struct {
	group, c1 int
	sent      time.Time
}

// NewCentral is C_2 for cfg (C1s, HostCap, Interval, MaxBundle).
func NewCentral(cfg *Config, st *Stats) *Central {
	c := &Central{cfg: cfg, st: st, c1: map[netip.AddrPort]int{}, hosts: map[netip.AddrPort]int{},
		c1Joins: map[uint32]c1Join{}, words: 1}
	c.db.C1s = len(cfg.C1s)
	for i, a := range cfg.C1s {
		c.c1[a] = i + 1
	}
	c.hostBuf = make([]byte, 0, 65535)
	c.toHosts.Begin(c.hostBuf, c.words, cfg.MaxBundle)
	c.toC1 = make([]bundle.Writer, len(cfg.C1s)+1)
	c.c1Buf = make([][]byte, len(cfg.C1s)+1)
	c.c1Arrivals, c.outLoad = make([][]time.Time, len(cfg.C1s)+1), make([]uint64, len(cfg.C1s)+1)
	for i := 1; i <= len(cfg.C1s); i++ {
		c.c1Buf[i] = make([]byte, 0, 65535)
		c.toC1[i].Begin(c.c1Buf[i], 1, cfg.MaxBundle)
	}
	c.ctlBuf = make([]byte, 0, bundle.ControlLen)
	if cfg.Reliable {
		c.rel, c.seenOf, c.bulkBuf = newOutbox(cfg.Interval), map[int]*seen{}, make([]byte, 0, 65535)
	}
	return c
}

// ctlPayload is a control message's length after its address field.
const ctlPayload = bundle.ControlLen - bundle.AddrBytes

// From handles one datagram from src.
func (c *Central) From(b []byte, src netip.AddrPort, now time.Time) {
	var r bundle.Reader
	if err := r.Open(b); err != nil {
		c.st.Drop(bundle.Reason(err), 1)
		return
	}
	c.st.mu.Lock()
	c.st.BundlesIn++
	c.st.PerBundle.Add(float64(r.Count()))
	c.st.mu.Unlock()
	if n, ok := c.c1[src]; ok {
		c.fromC1(&r, n, now)
		return
	}
	c.fromHost(&r, src, now)
}

func (c *Central) fromHost(r *bundle.Reader, src netip.AddrPort, now time.Time) {
	sender := c.hosts[src]
	repeat := false
	if c.rel != nil {
		if ctl, _, ok := lastSeq(r, false); ok && ctl.Host != 0 && ctl.Host <= 64 {
			h := int(ctl.Host)
			s := c.seenOf[h]
			if s == nil {
				s = &seen{}
				c.seenOf[h] = s
			}
			repeat = !s.first(ctl.Seq, now)
			c.toHostsControl(bundle.Bit(h), bundle.Control{Type: bundle.CtlRAck, Host: ctl.Host, Seq: ctl.Seq}, now)
		}
	}
	for {
		addr, p, ok := r.NextAddr()
		if !ok {
			return
		}
		if addr == bundle.ControlAddr {
			ctl, err := bundle.ParseControl(p)
			if err != nil || ctl.Host == 0 || int(ctl.Host) > 64 {
				c.st.Drop(DropControl, 1)
				continue
			}
			c.hosts[src], sender = int(ctl.Host), int(ctl.Host)
			c.control(ctl, now)
			continue
		}
		if sender == 0 {
			c.st.Drop(DropUnknown, 1)
			continue
		}
		if repeat {
			c.st.mu.Lock()
			c.st.Duplicates++
			c.st.mu.Unlock()
			continue
		}
		c.forward(addr, p, sender, now)
	}
}

func (c *Central) fromC1(r *bundle.Reader, n int, now time.Time) {
	for {
		addr, p, ok := r.NextAddr()
		if !ok {
			return
		}
		if addr == bundle.ControlAddr {
			ctl, err := bundle.ParseControl(p)
			if err != nil || ctl.Type != bundle.CtlAck {
				c.st.Drop(DropControl, 1)
				continue
			}
			if j, ok := c.c1Joins[ctl.Seq]; ok && j.c1 == n {
				delete(c.c1Joins, ctl.Seq)
				c.groupReady(j.group, now)
			}
			continue
		}
		c.forward(addr, p, 0, now)
	}
}

// forward sends a message to the hosts that want it (never its sender); a
// host's message also goes toward the outside when cfg.Outbound is set.
func (c *Central) forward(addr uint16, p []byte, sender int, now time.Time) {
	out := sender != 0 && c.cfg.Outbound && c.db.C1s > 0
	if out {
		c.toOutside(addr, p, now)
	}
	m := c.db.Deliver(addr, sender)
	if m == 0 {
		if !out {
			c.st.Drop(DropNoInterest, 1)
		}
		return
	}
	if c.level > 0 && !bundle.Priority(addr) {
		c.st.Drop(DropCongestion, 1)
		return
	}
	c.toHostsAdd(m, p, now, c.rel != nil && bundle.Priority(addr))
}

// toOutside copies a host's message to a C_1's send buffer (sec. 3.4: "the
// C_2 process copies the message to the appropriate C_1 send buffer"), sent
// at the next tick; the C_1 transmits it to the router as one IP multicast
// packet. The appropriate C_1 is the one that joined the message's packet
// address: it does not hear its own packets (no multicast loopback), while
// any other C_1 that had joined the address on the router's LAN would hand
// the message back to C_2 as an outside one. An address no C_1 has joined goes
// through the C_1 that was given the fewest messages so far, which keeps the
// outward load as even as the thesis's C_2 tries to (its model: a uniformly
// random C_1 per bundle).
func (c *Central) toOutside(addr uint16, p []byte, now time.Time) {
	n := c.db.C1(bundle.Group(addr))
	if n == 0 {
		n = 1
		for i := 2; i < len(c.outLoad); i++ {
			if c.outLoad[i] < c.outLoad[n] {
				n = i
			}
		}
	}
	w := &c.toC1[n]
	if !w.AddAddr(addr, p) {
		c.flushC1(n, now)
		if !w.AddAddr(addr, p) {
			c.st.Drop(DropOverflow, 1)
			return
		}
	}
	c.c1Arrivals[n] = append(c.c1Arrivals[n], now)
	c.outLoad[n]++
	c.st.mu.Lock()
	c.st.ToOutside++
	c.st.mu.Unlock()
}

// toHostsAdd puts a message in the bundle toward the hosts; a kept one
// (reliable mode's priority messages) is copied for retransmission, and the
// bundle keeps room for its closing sequence number.
func (c *Central) toHostsAdd(m bundle.Mask, p []byte, now time.Time, keep bool) {
	w := &c.toHosts
	if keep && !w.Reserved() && !w.Reserve(2*c.words, ctlPayload) {
		c.flushHosts(now)
		w.Reserve(2*c.words, ctlPayload)
	}
	if !w.AddMask(m, p) {
		c.flushHosts(now)
		if keep {
			w.Reserve(2*c.words, ctlPayload)
		}
		if !w.AddMask(m, p) {
			c.st.Drop(DropOverflow, 1)
			return
		}
	}
	if keep {
		c.rel.keep(0, m, p)
	}
	c.arrivals = append(c.arrivals, now)
}

// control handles a host's join or drop.
func (c *Central) control(ctl bundle.Control, now time.Time) {
	g, host := int(ctl.Group), int(ctl.Host)
	if (ctl.Type == bundle.CtlJoin || ctl.Type == bundle.CtlDrop) && g >= bundle.Groups {
		c.st.Drop(DropControl, 1) // a packet address outside the plan: counted, nothing changed
		return
	}
	if host > c.maxHost {
		c.maxHost = host
		if w := bundle.Words(host); w != c.words { // a wider mask from the next bundle on
			c.flushHosts(now)
			c.words = w
			c.toHosts.Begin(c.hostBuf, c.words, c.cfg.MaxBundle)
		}
	}
	switch ctl.Type {
	case bundle.CtlJoin:
		first := c.db.Join(g, host)
		c.wait(g, ack{host, ctl.Seq})
		if c.ready[g] || c.db.C1s == 0 {
			c.groupReady(g, now)
			return
		}
		if first || c.db.C1(g) == 0 {
			n := c.db.Assign(g)
			c.c1Seq++
			c.c1Joins[c.c1Seq] = c1Join{group: g, c1: n, sent: now}
			c.toC1Control(n, bundle.Control{Type: bundle.CtlJoin, Group: uint16(g), Seq: c.c1Seq}, now)
		}
	case bundle.CtlRAck:
		if c.rel != nil {
			c.st.Acked(c.rel.ack(ctl.Seq, bundle.Bit(host)))
		}
	case bundle.CtlSeq: // read before the loop (lastSeq)
	case bundle.CtlDrop:
		if c.db.Drop(g, host) {
			if n := c.db.Release(g); n != 0 {
				c.c1Seq++
				c.toC1Control(n, bundle.Control{Type: bundle.CtlDrop, Group: uint16(g), Seq: c.c1Seq}, now)
			}
			c.ready[g] = false
		}
		c.toHostsControl(bundle.Bit(host), bundle.Control{Type: bundle.CtlAck, Host: uint8(host), Seq: ctl.Seq}, now)
	default:
		c.st.Drop(DropControl, 1)
	}
}

// wait notes a host's join of g to acknowledge once g is ready: one per
// host, its latest number, so that its resends (or anyone's stream of
// joins) do not pile up while no C_1 has answered.
func (c *Central) wait(g int, a ack) {
	for i := range c.waiting[g] {
		if c.waiting[g][i].host == a.host {
			c.waiting[g][i].seq = a.seq
			return
		}
	}
	c.waiting[g] = append(c.waiting[g], a)
}

func (c *Central) groupReady(g int, now time.Time) {
	c.ready[g] = true
	for _, a := range c.waiting[g] {
		c.toHostsControl(bundle.Bit(a.host), bundle.Control{Type: bundle.CtlAck, Host: uint8(a.host), Seq: a.seq}, now)
	}
	c.waiting[g] = c.waiting[g][:0]
}

func (c *Central) toHostsControl(m bundle.Mask, ctl bundle.Control, now time.Time) {
	c.ctlBuf = ctl.AppendPayload(c.ctlBuf[:0])
	c.toHostsAdd(m, c.ctlBuf, now, false)
}

func (c *Central) toC1Control(n int, ctl bundle.Control, now time.Time) {
	c.ctlBuf = ctl.AppendPayload(c.ctlBuf[:0])
	w := &c.toC1[n]
	if !w.AddAddr(bundle.ControlAddr, c.ctlBuf) {
		c.flushC1(n, now)
		w.AddAddr(bundle.ControlAddr, c.ctlBuf)
	}
}

func (c *Central) flushHosts(now time.Time) {
	if c.toHosts.Reserved() {
		c.toHosts.Reserve(0, 0)
		var owe bundle.Mask
		for _, m := range c.rel.cur {
			owe |= m.mask
		}
		if seq := c.rel.close(owe, now); seq != 0 {
			c.ctlBuf = bundle.Control{Type: bundle.CtlSeq, Seq: seq}.AppendPayload(c.ctlBuf[:0])
			c.toHosts.AddMask(owe, c.ctlBuf)
		}
	}
	if c.toHosts.Count() == 0 {
		return
	}
	b := c.toHosts.Finish()
	c.Send(b, c.cfg.Hosts)
	c.winBytes += len(b) + frameOverhead
	c.st.mu.Lock()
	c.st.BundlesOut++
	for _, t := range c.arrivals {
		c.st.Added.Add(now.Sub(t).Seconds())
	}
	c.st.mu.Unlock()
	c.arrivals = c.arrivals[:0]
	c.toHosts.Begin(c.hostBuf, c.words, c.cfg.MaxBundle)
}

// flushC1 sends C_1 n's bundle when it holds anything, accounting the time
// each outward message waited in it.
func (c *Central) flushC1(n int, now time.Time) {
	w := &c.toC1[n]
	if w.Count() == 0 {
		return
	}
	c.Send(w.Finish(), c.cfg.C1s[n-1])
	c.st.mu.Lock()
	c.st.BundlesOut++
	for _, t := range c.c1Arrivals[n] {
		c.st.Added.Add(now.Sub(t).Seconds())
	}
	c.st.mu.Unlock()
	c.c1Arrivals[n] = c.c1Arrivals[n][:0]
	w.Begin(c.c1Buf[n], 1, c.cfg.MaxBundle)
}

// Tick is the bundling interval: everything gathered goes out, unanswered
// joins to C_1s are sent again, and the congestion level is updated.
func (c *Central) Tick(now time.Time) {
	c.flushHosts(now)
	if c.rel != nil {
		if n := c.rel.due(now, c.resendHosts); n > 0 {
			c.st.Drop(DropGaveUp, uint64(n))
		}
	}
	for j := range c.c1Joins {
		if jn := c.c1Joins[j]; now.Sub(jn.sent) >= retransmit {
			jn.sent = now
			c.c1Joins[j] = jn
			c.toC1Control(jn.c1, bundle.Control{Type: bundle.CtlJoin, Group: uint16(jn.group), Seq: j}, now)
		}
	}
	for n := 1; n < len(c.toC1); n++ {
		c.flushC1(n, now)
	}
	if c.winStart.IsZero() {
		c.winStart = now
	}
	if el := now.Sub(c.winStart); el >= utilWindow {
		util := float64(c.winBytes*8) / el.Seconds() / c.cfg.HostCap
		c.winStart, c.winBytes = now, 0
		level := c.level
		if util > CongestionHigh {
			level = 1
		} else if util < CongestionLow {
			level = 0
		}
		c.st.mu.Lock()
		c.st.Utilisation, c.st.Congestion = util, level
		c.st.mu.Unlock()
		if level != c.level {
			c.level = level
			var all bundle.Mask
			for id := 1; id <= c.maxHost; id++ {
				all |= bundle.Bit(id)
			}
			c.toHostsControl(all, bundle.Control{Type: bundle.CtlCongestion, Level: uint8(level)}, now)
		}
	}
}

// resendHosts sends a numbered bundle's priority messages again, in a bundle
// of their own, to the hosts that have not acknowledged it.
func (c *Central) resendHosts(seq uint32, p *pending) {
	w := &c.resend
	w.Begin(c.bulkBuf, c.words, c.cfg.MaxBundle)
	n := 0
	for _, m := range p.msgs {
		if m.mask&p.owe != 0 && w.AddMask(m.mask&p.owe, m.payload) {
			n++
		}
	}
	c.ctlBuf = bundle.Control{Type: bundle.CtlSeq, Seq: seq}.AppendPayload(c.ctlBuf[:0])
	w.AddMask(p.owe, c.ctlBuf)
	b := w.Finish()
	c.Send(b, c.cfg.Hosts)
	c.winBytes += len(b) + frameOverhead
	c.st.mu.Lock()
	c.st.BundlesOut++
	c.st.Retransmitted += uint64(n)
	c.st.mu.Unlock()
}

// RunC2 runs C_2 on its socket for cfg.Duration.
func RunC2(ctx context.Context, cfg *Config, st *Stats) error {
	uc, pc, err := listen(cfg.Port)
	if err != nil {
		return err
	}
	defer uc.Close()
	c := NewCentral(cfg, st)
	c.Send = func(b []byte, to netip.AddrPort) {
		if _, err := uc.WriteToUDPAddrPort(b, to); err != nil {
			st.Drop("send_error", 1)
		}
	}
	end := time.Now().Add(cfg.Duration)
	next := time.Now().Add(cfg.Interval)
	r := newReader()
	for ctx.Err() == nil && time.Now().Before(end) {
		_ = uc.SetReadDeadline(next)
		if !r.read(pc, c.From) {
			return fmt.Errorf("C_2 socket closed")
		}
		if now := time.Now(); !now.Before(next) {
			c.Tick(now)
			next = next.Add(cfg.Interval)
			if next.Before(now) { // fell behind: do not try to catch up
				next = now.Add(cfg.Interval)
			}
		}
	}
	c.Tick(time.Now())
	st.mu.Lock()
	st.Groups = 0
	for g := 0; g < bundle.Groups; g++ {
		if c.db.Interest(g) != 0 {
			st.Groups++
		}
	}
	st.mu.Unlock()
	return nil
}
