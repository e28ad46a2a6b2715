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
	"protolab/agents/dishost"
)

// Config is one process's part in the exercise (flags of protolab-converter).
type Config struct {
	ID         int // host id 1..64, C_1 number 1..6
	Iface      string
	Port       int // this role's UDP port (C_2, C_1 or host interface)
	MPort      int // UDP port of the IP multicast messages (router side, baseline hosts)
	Plan       *Plan
	Rate       float64 // messages/s this process originates
	Arrival    dishost.Arrival
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
	sender, _, sent, ok := Header(payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !ok:
		s.Dropped[DropHeader]++
	case sender == id && id != 0:
		s.Reflected++
	default:
		s.Received++
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
	pacer, err := dishost.NewPacer(cfg.Rate, cfg.Arrival, start, cfg.Seed)
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
			binary.BigEndian.PutUint16(msg, Addr(group, seq, rng.Float64() < cfg.Priority))
			PutHeader(msg[bundle.AddrBytes:], sender, seq, now)
			emit(group, msg)
			st.mu.Lock()
			st.Sent++
			for _, id := range ids {
				st.SentTo[id]++
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
			st.mu.Lock()
			st.PacketsIn++
			st.mu.Unlock()
			if len(b) < bundle.AddrBytes {
				st.Drop(DropHeader, 1)
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
	acked map[uint32]bool
	cond  *sync.Cond
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
	c2 := udpAddr(cfg.C2)
	words := bundle.Words(cfg.Plan.Hosts)
	h := &hostSide{buf: make([]byte, 0, 65535), acked: map[uint32]bool{}}
	h.cond = sync.NewCond(&h.mu)
	h.w.Begin(h.buf, words, cfg.MaxBundle)
	flush := func() { // h.mu held
		if h.w.Count() == 0 {
			return
		}
		h.w.SetMask(bundle.Bit(cfg.ID))
		b := h.w.Finish()
		if _, err := uc.WriteToUDP(b, c2); err == nil {
			st.mu.Lock()
			st.BundlesOut++
			st.mu.Unlock()
		}
		h.w.Begin(h.buf, words, cfg.MaxBundle)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := newReader()
		var br bundle.Reader
		for r.read(pc, func(b []byte, _ netip.AddrPort, now time.Time) {
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
			for {
				m, p, ok := br.NextMask()
				if !ok {
					break
				}
				if !m.Has(cfg.ID) {
					continue
				}
				if len(p) > 0 && p[0] != kindData {
					c, err := bundle.ParseControl(p)
					if err != nil {
						st.Drop(DropControl, 1)
						continue
					}
					h.mu.Lock()
					switch c.Type {
					case bundle.CtlAck:
						h.acked[c.Seq] = true
						h.cond.Broadcast()
					case bundle.CtlCongestion:
						st.mu.Lock()
						st.Congestion = int(c.Level)
						st.mu.Unlock()
					}
					h.mu.Unlock()
					continue
				}
				st.deliver(cfg.ID, p, now)
			}
		}) {
		}
	}()
	defer func() { _ = uc.Close(); wg.Wait() }()

	// Join every group, resending the unacknowledged ones, before any traffic.
	groups := cfg.Plan.GroupsOf(cfg.ID)
	st.Groups = len(groups)
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
				flush()
				h.w.AddAddr(bundle.ControlAddr, ctl)
			}
		}
		flush()
		h.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("C_2 at %v acknowledged %d of %d joins in %v", cfg.C2, len(groups)-missing, len(groups), cfg.JoinWait)
		}
		if !sleep(ctx, retransmit/4) {
			return nil
		}
	}

	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the bundling interval
		defer wg.Done()
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				h.mu.Lock()
				flush()
				h.mu.Unlock()
			}
		}
	}()
	err = source(ctx, cfg, st, cfg.ID, func(_ int, msg []byte) {
		h.mu.Lock()
		addr := binary.BigEndian.Uint16(msg)
		if !h.w.AddAddr(addr, msg[bundle.AddrBytes:]) {
			flush()
			if !h.w.AddAddr(addr, msg[bundle.AddrBytes:]) {
				st.Drop(DropOverflow, 1)
			}
		}
		h.mu.Unlock()
	})
	close(stop)
	h.mu.Lock()
	flush()
	h.mu.Unlock()
	sleep(ctx, cfg.Drain)
	return err
}
