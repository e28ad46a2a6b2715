package converter

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"sync"
	"time"

	"protolab/agents/bundle"
	"protolab/agents/internal/measure"
)

// Config is one process's part in the exercise (flags of protolab-converter).
type Config struct {
	ID         int // host id 1..64, C_1 number 1..6
	Iface      string
	Port       int // this role's UDP port (C_2, C_1 or host interface)
	MPort      int // UDP port of the IP multicast messages (router side, baseline hosts)
	Plan       *Plan
	Rate       float64 // messages/s this process originates
	Arrival    measure.Arrival
	Size       int     // bytes per message, address included
	Priority   float64 // share of originated messages with the priority flag
	Interval   time.Duration
	MaxBundle  int
	MTU        int
	Duration   time.Duration // sending (sources) or running (converters)
	StartDelay time.Duration // sources: wait before sending (every receiver has joined)
	Drain      time.Duration // sources: keep receiving after sending
	C2         netip.AddrPort
	C1s        []netip.AddrPort
	Hosts      netip.AddrPort // C_2: the hosts' broadcast address and port
	HostCap    float64        // C_2: bits/s of its link to the hosts
	C1Cap      float64        // C_2: bits/s of its link to the C_1s
	Seed       int64
	JoinWait   time.Duration // H: how long to wait for C_2's acknowledgements
	Reliable   bool          // C_2, H: acknowledged delivery of priority messages (reliable.go)
	Outbound   bool          // C_2: every host data message also toward the outside, through a C_1
}

// Defaults.
const (
	DefaultMPort     = 4003
	DefaultMaxBundle = 1472 // one Ethernet frame: 1500 - IP - UDP
	CongestionHigh   = 0.80 // sec. 3.4.3: low-priority messages dropped above
	CongestionLow    = 0.40 // ... until the utilisation falls below this
	utilWindow       = 100 * time.Millisecond
	frameOverhead    = 14 + 20 + 8 // Ethernet header, IP, UDP: what the link carries besides the bundle
	retransmit       = 200 * time.Millisecond
)

// deliver accounts one message that reached host id's application.
func (s *Stats) deliver(id int, payload []byte, now time.Time) {
	sender, _, sent, prio, ok := Header(payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !ok:
		s.Dropped[DropHeader]++
	case sender == id && id != 0:
		s.Reflected++
	default:
		s.Received++
		if prio {
			s.ReceivedPriority++
		}
		s.Delay.Add(now.Sub(sent).Seconds())
	}
}

// source originates cfg.Rate messages/s for cfg.Duration after the start
// delay; each goes to emit with its packet address.
func source(ctx context.Context, cfg *Config, st *Stats, sender int, emit func(group int, msg []byte)) error {
	if !sleep(ctx, cfg.StartDelay) {
		return nil
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	defer func() { st.mu.Lock(); st.Elapsed = time.Since(start); st.mu.Unlock() }()
	if cfg.Rate <= 0 {
		sleep(ctx, cfg.Duration)
		return nil
	}
	pacer, err := measure.NewPacer(cfg.Rate, cfg.Arrival, start, cfg.Seed)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(cfg.Seed + 1))
	msg := make([]byte, cfg.Size)
	ids := make([]int, 0, 64)
	var seq uint32
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(end) {
			return nil
		}
		n := pacer.Due(now, Batch)
		if n == 0 {
			next := pacer.NextAt()
			if next.After(end) {
				next = end
			}
			sleep(ctx, time.Until(next))
			continue
		}
		for i := 0; i < n; i++ {
			seq++
			var group int
			if sender == 0 {
				group, ids = int(seq)%cfg.Plan.WANGroups, ids[:0]
			} else {
				group, ids = cfg.Plan.Pick(rng, sender, ids)
			}
			prio := rng.Float64() < cfg.Priority
			binary.BigEndian.PutUint16(msg, Addr(group, seq, prio))
			PutHeader(msg[bundle.AddrBytes:], sender, seq, now, prio)
			emit(group, msg)
			st.mu.Lock()
			st.Sent++
			for _, id := range ids {
				st.SentTo[id]++
			}
			if prio {
				st.SentPriority++
				for _, id := range ids {
					st.SentPriorityTo[id]++
				}
			}
			st.mu.Unlock()
		}
	}
	return nil
}

// RunHost is the baseline simulation host (no converter): one message per IP
// multicast packet, real IGMP joins of its groups. With ID 0 it is the WAN
// router's source and sink (RunWAN).
func RunHost(ctx context.Context, cfg *Config, st *Stats) error {
	ifi, err := iface(cfg.Iface)
	if err != nil {
		return err
	}
	uc, pc, err := listen(cfg.MPort)
	if err != nil {
		return err
	}
	defer uc.Close()
	if err := multicastOut(pc, ifi); err != nil {
		return err
	}
	j := newJoiner(ifi, pc)
	defer j.close()
	if cfg.ID != 0 {
		for _, g := range cfg.Plan.GroupsOf(cfg.ID) {
			if err := j.join(cfg.Plan.IP(g)); err != nil {
				return fmt.Errorf("%w (raise net.ipv4.igmp_max_memberships?)", err)
			}
		}
	}
	st.Groups = len(j.by)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := newReader()
		for r.read(pc, func(b []byte, _ netip.AddrPort, now time.Time) {
			if !st.In(b) {
				return
			}
			st.deliver(cfg.ID, b[bundle.AddrBytes:], now)
		}) {
		}
	}()
	dst := make([]*net.UDPAddr, cfg.Plan.Groups())
	for g := range dst {
		dst[g] = &net.UDPAddr{IP: cfg.Plan.IP(g).AsSlice(), Port: cfg.MPort}
	}
	err = source(ctx, cfg, st, cfg.ID, func(group int, msg []byte) {
		if _, werr := pc.WriteTo(msg, nil, dst[group]); werr == nil {
			st.mu.Lock()
			st.PacketsOut++
			st.mu.Unlock()
		}
	})
	sleep(ctx, cfg.Drain)
	_ = uc.Close()
	wg.Wait()
	return err
}

// RunWAN is the outside: cfg.Rate messages/s, one per IP multicast packet,
// over the WAN packet addresses, out of the router's LAN interface.
func RunWAN(ctx context.Context, cfg *Config, st *Stats) error {
	cfg.ID = 0
	return RunHost(ctx, cfg, st)
}

// hostSide is a host interface's state shared by its goroutines.
type hostSide struct {
	mu    sync.Mutex
	w     bundle.Writer
	buf   []byte
	acked []bool // join i+1 acknowledged (C_2 acknowledges join i with number i+1)
	cond  *sync.Cond
	rel   *outbox // reliable mode: this host's numbered priority bundles
	seen  seen    // ... and C_2's numbers handed up
	rbuf  []byte
	rw    bundle.Writer

	cfg    *Config
	st     *Stats
	uc     *net.UDPConn
	c2     *net.UDPAddr
	words  int
	ctlOut []byte // flush's sequence-number control message
}

// ack notes C_2's acknowledgement of join seq; false (nothing kept) when
// no join has that number. h.mu held.
func (h *hostSide) ack(seq uint32) bool {
	if seq == 0 || uint64(seq) >= uint64(len(h.acked)) {
		return false
	}
	h.acked[seq] = true
	h.cond.Broadcast()
	return true
}

// newHostSide is RunH's state for cfg's host with joins groups, sending to
// C_2 over uc.
func newHostSide(cfg *Config, st *Stats, uc *net.UDPConn, groups []int) *hostSide {
	h := &hostSide{buf: make([]byte, 0, 65535), acked: make([]bool, len(groups)+1)}
	h.cfg, h.st, h.uc, h.c2 = cfg, st, uc, udpAddr(cfg.C2)
	h.words = bundle.Words(cfg.Plan.Hosts)
	h.cond = sync.NewCond(&h.mu)
	h.w.Begin(h.buf, h.words, cfg.MaxBundle)
	if cfg.Reliable {
		h.rel, h.rbuf = newOutbox(cfg.Interval), make([]byte, 0, 65535)
	}
	h.ctlOut = make([]byte, 0, bundle.ControlLen)
	return h
}

// flush closes the bundle being written (numbering it in reliable mode),
// sends it to C_2 when it holds anything and begins the next (h.mu held).
func (h *hostSide) flush() {
	cfg, st := h.cfg, h.st
	if h.w.Reserved() {
		h.w.Reserve(0, 0)
		if seq := h.rel.close(1, time.Now()); seq != 0 {
			h.ctlOut = bundle.Control{Type: bundle.CtlSeq, Host: uint8(cfg.ID), Seq: seq}.AppendPayload(h.ctlOut[:0])
			h.w.AddAddr(bundle.ControlAddr, h.ctlOut)
		}
	}
	if h.w.Count() == 0 {
		return
	}
	h.w.SetMask(bundle.Bit(cfg.ID))
	b := h.w.Finish()
	if _, err := h.uc.WriteToUDP(b, h.c2); err == nil {
		st.mu.Lock()
		st.BundlesOut++
		st.mu.Unlock()
	}
	h.w.Begin(h.buf, h.words, cfg.MaxBundle)
}

// RunH is a simulation host behind the converter: joins its groups at C_2
// (acknowledged control messages), bundles its messages every interval to
// C_2 and reads C_2's broadcast bundles.
func RunH(ctx context.Context, cfg *Config, st *Stats) error {
	uc, pc, err := listen(cfg.Port)
	if err != nil {
		return err
	}
	defer uc.Close()
	groups := cfg.Plan.GroupsOf(cfg.ID)
	h := newHostSide(cfg, st, uc, groups)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := newReader()
		var br bundle.Reader
		for r.read(pc, func(b []byte, _ netip.AddrPort, now time.Time) { h.receive(&br, b, now) }) {
		}
	}()
	defer func() { _ = uc.Close(); wg.Wait() }()

	// Join every group, resending the unacknowledged ones, before any traffic.
	st.Groups = len(groups)
	if joined, err := h.joinAll(ctx, groups); !joined {
		return err
	}

	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the bundling interval
		defer wg.Done()
		h.interval(stop)
	}()
	err = source(ctx, cfg, st, cfg.ID, func(_ int, msg []byte) { h.emit(msg) })
	h.mu.Lock()
	h.flush()
	h.mu.Unlock()
	sleep(ctx, cfg.Drain) // the interval goes on: acknowledgements and retransmissions
	close(stop)
	h.mu.Lock()
	h.flush() // the acknowledgements gathered since the last interval
	h.mu.Unlock()
	return err
}

// receive hands up one bundle from C_2 read into b: its control messages
// for this host, and its data messages unless it repeats a numbered bundle
// already handed up.
func (h *hostSide) receive(br *bundle.Reader, b []byte, now time.Time) {
	cfg, st := h.cfg, h.st
	if err := br.Open(b); err != nil {
		st.Drop(bundle.Reason(err), 1)
		return
	}
	if !br.Mask().Has(cfg.ID) {
		return // not for this host: the interface never hands it up
	}
	st.mu.Lock()
	st.BundlesIn++
	st.PerBundle.Add(float64(br.Count()))
	st.mu.Unlock()
	repeat := false
	if h.rel != nil {
		if c, m, ok := lastSeq(br, true); ok && m.Has(cfg.ID) {
			h.mu.Lock()
			repeat = !h.seen.first(c.Seq, now)
			h.addCtl(bundle.Control{Type: bundle.CtlRAck, Host: uint8(cfg.ID), Seq: c.Seq}, h.flush)
			h.mu.Unlock()
		}
	}
	for {
		m, p, ok := br.NextMask()
		if !ok {
			break
		}
		if !m.Has(cfg.ID) {
			continue
		}
		if !isData(p) {
			h.control(p)
			continue
		}
		if repeat {
			st.mu.Lock()
			st.Duplicates++
			st.mu.Unlock()
			continue
		}
		st.deliver(cfg.ID, p, now)
	}
}

// control acts on one control message from C_2: a join's or a numbered
// bundle's acknowledgement, or the congestion level.
func (h *hostSide) control(p []byte) {
	cfg, st := h.cfg, h.st
	c, err := bundle.ParseControl(p)
	if err != nil {
		st.Drop(DropControl, 1)
		return
	}
	h.mu.Lock()
	switch c.Type {
	case bundle.CtlAck:
		if !h.ack(c.Seq) {
			st.Drop(DropControl, 1)
		}
	case bundle.CtlRAck:
		if h.rel != nil && int(c.Host) == cfg.ID {
			st.Acked(h.rel.ack(c.Seq, 1))
		}
	case bundle.CtlCongestion:
		st.mu.Lock()
		st.Congestion = int(c.Level)
		st.mu.Unlock()
	}
	h.mu.Unlock()
}

// joinAll sends a join for every group of groups not yet acknowledged,
// again every retransmit/4, until C_2 has acknowledged them all (true).
// It is false with an error when cfg.JoinWait passes first, and false with
// none when ctx ends.
func (h *hostSide) joinAll(ctx context.Context, groups []int) (bool, error) {
	cfg := h.cfg
	deadline := time.Now().Add(cfg.JoinWait)
	ctl := make([]byte, 0, bundle.ControlLen)
	for {
		h.mu.Lock()
		missing := 0
		for i, g := range groups {
			seq := uint32(i + 1)
			if h.acked[seq] {
				continue
			}
			missing++
			ctl = bundle.Control{Type: bundle.CtlJoin, Host: uint8(cfg.ID), Group: uint16(g), Seq: seq}.AppendPayload(ctl[:0])
			if !h.w.AddAddr(bundle.ControlAddr, ctl) {
				h.flush()
				h.w.AddAddr(bundle.ControlAddr, ctl)
			}
		}
		h.flush()
		h.mu.Unlock()
		if missing == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("C_2 at %v acknowledged %d of %d joins in %v", cfg.C2, len(groups)-missing, len(groups), cfg.JoinWait)
		}
		if !sleep(ctx, retransmit/4) {
			return false, nil
		}
	}
}

// interval flushes the bundle every cfg.Interval, and in reliable mode
// retransmits the numbered bundles C_2 has not acknowledged, until stop is
// closed.
func (h *hostSide) interval(stop <-chan struct{}) {
	cfg, st := h.cfg, h.st
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			h.mu.Lock()
			h.flush()
			if h.rel != nil {
				if n := h.rel.due(now, func(seq uint32, p *pending) { h.resend(cfg, seq, p, h.uc, h.c2, st) }); n > 0 {
					st.Drop(DropGaveUp, uint64(n))
				}
			}
			h.mu.Unlock()
		}
	}
}

// emit adds one originated message (packet address first) to the bundle,
// keeping the priority ones for retransmission in reliable mode.
func (h *hostSide) emit(msg []byte) {
	h.mu.Lock()
	addr := binary.BigEndian.Uint16(msg)
	keep := h.rel != nil && bundle.Priority(addr)
	if keep && !h.w.Reserved() && !h.w.Reserve(bundle.AddrBytes, ctlPayload) {
		h.flush()
		h.w.Reserve(bundle.AddrBytes, ctlPayload)
	}
	if !h.w.AddAddr(addr, msg[bundle.AddrBytes:]) {
		h.flush()
		if keep {
			h.w.Reserve(bundle.AddrBytes, ctlPayload)
		}
		if !h.w.AddAddr(addr, msg[bundle.AddrBytes:]) {
			h.st.Drop(DropOverflow, 1)
			keep = false
		}
	}
	if keep {
		h.rel.keep(addr, 0, msg[bundle.AddrBytes:])
	}
	h.mu.Unlock()
}

// addCtl puts a control message in the next bundle to C_2 (h.mu held).
func (h *hostSide) addCtl(c bundle.Control, flush func()) {
	var b [bundle.ControlLen]byte
	p := c.AppendPayload(b[:0])
	if !h.w.AddAddr(bundle.ControlAddr, p) {
		flush()
		h.w.AddAddr(bundle.ControlAddr, p)
	}
}

// resend sends a numbered bundle's priority messages to C_2 again, in a
// bundle of their own under the same number (h.mu held).
func (h *hostSide) resend(cfg *Config, seq uint32, p *pending, uc *net.UDPConn, c2 *net.UDPAddr, st *Stats) {
	h.rw.Begin(h.rbuf, h.w.Words(), cfg.MaxBundle)
	n := 0
	for _, m := range p.msgs {
		if h.rw.AddAddr(m.addr, m.payload) {
			n++
		}
	}
	var b [bundle.ControlLen]byte
	h.rw.AddAddr(bundle.ControlAddr, bundle.Control{Type: bundle.CtlSeq, Host: uint8(cfg.ID), Seq: seq}.AppendPayload(b[:0]))
	h.rw.SetMask(bundle.Bit(cfg.ID))
	if _, err := uc.WriteToUDP(h.rw.Finish(), c2); err == nil {
		st.mu.Lock()
		st.BundlesOut++
		st.Retransmitted += uint64(n)
		st.mu.Unlock()
	}
}
