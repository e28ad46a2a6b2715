package converter

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"protolab/agents/bundle"
)

// RunC1 is a router interface: IP multicast from the router in (the packet
// addresses C_2 told it to join, with real IGMP on cfg.Iface), bundled every
// interval to C_2; C_2's bundles out, one message per packet of at most
// cfg.MTU bytes.
func RunC1(ctx context.Context, cfg *Config, st *Stats) error {
	ifi, err := iface(cfg.Iface)
	if err != nil {
		return err
	}
	cuc, cpc, err := listen(cfg.Port) // bundles and control with C_2
	if err != nil {
		return err
	}
	defer cuc.Close()
	muc, mpc, err := listen(cfg.MPort) // the router's side
	if err != nil {
		return err
	}
	defer muc.Close()
	if err := multicastOut(mpc, ifi); err != nil {
		return err
	}
	j := newJoiner(ifi, mpc)
	defer j.close()
	c := &c1Side{cfg: cfg, st: st, cuc: cuc, c2: udpAddr(cfg.C2), mpc: mpc, j: j}
	c.buf = make([]byte, 0, 65535)
	c.w.Begin(c.buf, 1, cfg.MaxBundle)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the router's IP multicast: one message per packet
		defer wg.Done()
		r := newReader()
		for r.read(mpc, c.fromRouter) {
		}
	}()
	c.dst = &net.UDPAddr{Port: cfg.MPort}
	c.ctlBuf = make([]byte, 0, bundle.ControlLen)
	go func() { // C_2's bundles: control, and messages for the outside
		defer wg.Done()
		r := newReader()
		var br bundle.Reader
		for r.read(cpc, func(b []byte, _ netip.AddrPort, now time.Time) { c.fromC2(&br, b, now) }) {
		}
	}()

	c.bundleUntil(ctx)
	_ = cuc.Close()
	_ = muc.Close()
	wg.Wait()
	return nil
}

// c1Side is a router interface's state shared by RunC1's goroutines.
type c1Side struct {
	cfg *Config
	st  *Stats
	cuc *net.UDPConn // to C_2
	c2  *net.UDPAddr
	mpc *ipv4.PacketConn // the router's side
	j   *joiner

	mu       sync.Mutex
	w        bundle.Writer // the bundle to C_2
	buf      []byte
	arrivals []time.Time // when each message in w arrived; zero for control

	dst    *net.UDPAddr // fromC2's: one packet's IP multicast destination
	ctlBuf []byte       // fromC2's: one acknowledgement (under mu)
}

// flush sends the bundle to C_2 when it holds anything, accounting the
// delay each message waited in it, and begins the next (c.mu held).
func (c *c1Side) flush(now time.Time) {
	st := c.st
	if c.w.Count() == 0 {
		return
	}
	if _, err := c.cuc.WriteToUDP(c.w.Finish(), c.c2); err == nil {
		st.mu.Lock()
		st.BundlesOut++
		for _, t := range c.arrivals {
			if !t.IsZero() {
				st.Added.Add(now.Sub(t).Seconds())
			}
		}
		st.mu.Unlock()
	}
	c.arrivals = c.arrivals[:0]
	c.w.Begin(c.buf, 1, c.cfg.MaxBundle)
}

// add puts one message in the bundle, flushing a full one first (c.mu held).
func (c *c1Side) add(addr uint16, p []byte, arrived time.Time) {
	if !c.w.AddAddr(addr, p) {
		c.flush(time.Now())
		if !c.w.AddAddr(addr, p) {
			c.st.Drop(DropOverflow, 1)
			return
		}
	}
	c.arrivals = append(c.arrivals, arrived)
}

// fromRouter bundles one IP multicast packet from the router.
func (c *c1Side) fromRouter(b []byte, _ netip.AddrPort, now time.Time) {
	if !c.st.In(b) {
		return
	}
	c.mu.Lock()
	c.add(uint16(b[0])<<8|uint16(b[1]), b[bundle.AddrBytes:], now)
	c.mu.Unlock()
}

// fromC2 handles one bundle from C_2 read into b: control messages are
// acted on, the others go out to the router one per packet.
func (c *c1Side) fromC2(br *bundle.Reader, b []byte, now time.Time) {
	cfg, st := c.cfg, c.st
	if err := br.Open(b); err != nil {
		st.Drop(bundle.Reason(err), 1)
		return
	}
	st.mu.Lock()
	st.BundlesIn++
	st.PerBundle.Add(float64(br.Count()))
	st.mu.Unlock()
	for {
		addr, p, ok := br.NextAddr()
		if !ok {
			return
		}
		if addr == bundle.ControlAddr {
			c.control(p, now)
			continue
		}
		if bundle.AddrBytes+len(p) > cfg.MTU {
			st.Drop(DropOverflow, 1)
			continue
		}
		c.dst.IP = cfg.Plan.IP(bundle.Group(addr)).AsSlice()
		msg := append([]byte{byte(addr >> 8), byte(addr)}, p...)
		if _, err := c.mpc.WriteTo(msg, nil, c.dst); err == nil {
			st.mu.Lock()
			st.PacketsOut++
			st.mu.Unlock()
		}
	}
}

// control acts on C_2's join or drop of a group (IGMP on the interface) and
// acknowledges it to C_2 at once.
func (c *c1Side) control(p []byte, now time.Time) {
	cfg, st, j := c.cfg, c.st, c.j
	ctl, err := bundle.ParseControl(p)
	if err != nil || int(ctl.Group) >= bundle.Groups {
		st.Drop(DropControl, 1)
		return
	}
	ip := cfg.Plan.IP(int(ctl.Group))
	switch ctl.Type {
	case bundle.CtlJoin:
		err = j.join(ip)
	case bundle.CtlDrop:
		err = j.leave(ip)
	default:
		st.Drop(DropControl, 1)
		return
	}
	if err != nil {
		st.Drop("join_error", 1)
		return
	}
	st.mu.Lock()
	st.Groups = len(j.by)
	st.mu.Unlock()
	c.mu.Lock()
	c.ctlBuf = bundle.Control{Type: bundle.CtlAck, Seq: ctl.Seq}.AppendPayload(c.ctlBuf[:0])
	c.add(bundle.ControlAddr, c.ctlBuf, time.Time{})
	c.flush(now)
	c.mu.Unlock()
}

// bundleUntil flushes the bundle to C_2 every cfg.Interval until ctx ends
// or cfg.Duration has passed, then once more.
func (c *c1Side) bundleUntil(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	end := time.After(c.cfg.Duration)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case now := <-t.C:
			c.mu.Lock()
			c.flush(now)
			c.mu.Unlock()
		}
	}
	t.Stop()
	c.mu.Lock()
	c.flush(time.Now())
	c.mu.Unlock()
}
