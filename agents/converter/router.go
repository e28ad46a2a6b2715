package converter

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

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
	c2 := udpAddr(cfg.C2)

	var mu sync.Mutex
	var w bundle.Writer
	buf := make([]byte, 0, 65535)
	var arrivals []time.Time
	w.Begin(buf, 1, cfg.MaxBundle)
	flush := func(now time.Time) { // mu held
		if w.Count() == 0 {
			return
		}
		if _, err := cuc.WriteToUDP(w.Finish(), c2); err == nil {
			st.mu.Lock()
			st.BundlesOut++
			for _, t := range arrivals {
				if !t.IsZero() {
					st.Added.Add(now.Sub(t).Seconds())
				}
			}
			st.mu.Unlock()
		}
		arrivals = arrivals[:0]
		w.Begin(buf, 1, cfg.MaxBundle)
	}
	add := func(addr uint16, p []byte, arrived time.Time) { // mu held
		if !w.AddAddr(addr, p) {
			flush(time.Now())
			if !w.AddAddr(addr, p) {
				st.Drop(DropOverflow, 1)
				return
			}
		}
		arrivals = append(arrivals, arrived)
	}

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the router's IP multicast: one message per packet
		defer wg.Done()
		r := newReader()
		for r.read(mpc, func(b []byte, _ netip.AddrPort, now time.Time) {
			st.mu.Lock()
			st.PacketsIn++
			st.mu.Unlock()
			if len(b) < bundle.AddrBytes {
				st.Drop(DropHeader, 1)
				return
			}
			mu.Lock()
			add(uint16(b[0])<<8|uint16(b[1]), b[bundle.AddrBytes:], now)
			mu.Unlock()
		}) {
		}
	}()
	dst := &net.UDPAddr{Port: cfg.MPort}
	ctlBuf := make([]byte, 0, bundle.ControlLen)
	go func() { // C_2's bundles: control, and messages for the outside
		defer wg.Done()
		r := newReader()
		var br bundle.Reader
		for r.read(cpc, func(b []byte, _ netip.AddrPort, now time.Time) {
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
					ctl, err := bundle.ParseControl(p)
					if err != nil || int(ctl.Group) >= bundle.Groups {
						st.Drop(DropControl, 1)
						continue
					}
					ip := cfg.Plan.IP(int(ctl.Group))
					switch ctl.Type {
					case bundle.CtlJoin:
						err = j.join(ip)
					case bundle.CtlDrop:
						err = j.leave(ip)
					default:
						st.Drop(DropControl, 1)
						continue
					}
					if err != nil {
						st.Drop("join_error", 1)
						continue
					}
					st.mu.Lock()
					st.Groups = len(j.by)
					st.mu.Unlock()
					mu.Lock()
					ctlBuf = bundle.Control{Type: bundle.CtlAck, Seq: ctl.Seq}.AppendPayload(ctlBuf[:0])
					add(bundle.ControlAddr, ctlBuf, time.Time{})
					flush(now)
					mu.Unlock()
					continue
				}
				if bundle.AddrBytes+len(p) > cfg.MTU {
					st.Drop(DropOverflow, 1)
					continue
				}
				dst.IP = cfg.Plan.IP(bundle.Group(addr)).AsSlice()
				msg := append([]byte{byte(addr >> 8), byte(addr)}, p...)
				if _, err := mpc.WriteTo(msg, nil, dst); err == nil {
					st.mu.Lock()
					st.PacketsOut++
					st.mu.Unlock()
				}
			}
		}) {
		}
	}()

	t := time.NewTicker(cfg.Interval)
	end := time.After(cfg.Duration)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case now := <-t.C:
			mu.Lock()
			flush(now)
			mu.Unlock()
		}
	}
	t.Stop()
	mu.Lock()
	flush(time.Now())
	mu.Unlock()
	_ = cuc.Close()
	_ = muc.Close()
	wg.Wait()
	return nil
}
