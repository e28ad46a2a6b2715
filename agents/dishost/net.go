package dishost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"protolab/agents/internal/measure"
)

// Batch is the number of datagrams per sendmmsg/recvmmsg call.
const Batch = 64

// Sender sends a generator's messages at a pacer's times.
type Sender struct {
	Gen     *Generator
	Pacer   *measure.Pacer
	Dest    netip.Addr // unicast destination, or invalid: the groups of the plan
	Port    int
	Iface   string // multicast interface ("" = routing table)
	TTL     int
	mu      sync.Mutex
	Sent    uint64
	SendErr uint64
	Bytes   uint64
	first   time.Time // when the first batch left (the write returned)
	last    time.Time // when the last batch left
}

// Span is when the first and the last datagram were handed to the kernel (zero before any).
func (s *Sender) Span() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.last
}

// Snapshot returns the sent packet count and bytes (safe while running).
func (s *Sender) Snapshot() (packets, bytes, errs uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Sent, s.Bytes, s.SendErr
}

// Run sends until ctx ends.
func (s *Sender) Run(ctx context.Context) error {
	c, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		return err
	}
	defer c.Close()
	uc := c.(*net.UDPConn)
	_ = uc.SetWriteBuffer(4 << 20)
	pc := ipv4.NewPacketConn(c)
	if s.Iface != "" {
		ifi, err := net.InterfaceByName(s.Iface)
		if err != nil {
			return fmt.Errorf("interface %s: %w", s.Iface, err)
		}
		if err := pc.SetMulticastInterface(ifi); err != nil {
			return fmt.Errorf("multicast interface %s: %w", s.Iface, err)
		}
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = 1
	}
	_ = pc.SetMulticastTTL(ttl)
	_ = pc.SetMulticastLoopback(true)
	msgs := make([]ipv4.Message, Batch)
	bufs := make([][]byte, Batch)
	addrs := make([]*net.UDPAddr, s.Gen.plan.Groups)
	for g := range addrs {
		a := s.Gen.plan.Group(g)
		if s.Dest.IsValid() {
			a = s.Dest
		}
		addrs[g] = &net.UDPAddr{IP: a.AsSlice(), Port: s.Port}
	}
	for i := range msgs {
		bufs[i] = make([]byte, MaxSize)
		msgs[i].Buffers = [][]byte{nil}
	}
	for ctx.Err() == nil {
		now := time.Now()
		n := s.Pacer.Due(now, Batch)
		if n == 0 {
			wait := time.Until(s.Pacer.NextAt())
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
			continue
		}
		var bytes uint64
		for i := 0; i < n; i++ {
			m, g, err := s.Gen.Next(bufs[i], now)
			if err != nil {
				return err
			}
			msgs[i].Buffers[0] = bufs[i][:m]
			msgs[i].Addr = addrs[g]
			bytes += uint64(m)
		}
		sent := 0
		for sent < n {
			k, err := pc.WriteBatch(msgs[sent:n], 0)
			if err != nil {
				if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
					s.mu.Lock()
					s.SendErr++
					s.mu.Unlock()
					continue
				}
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			sent += k
		}
		done := time.Now()
		s.mu.Lock()
		s.Sent += uint64(n)
		s.Bytes += bytes
		if s.first.IsZero() {
			s.first = done
		}
		s.last = done
		s.mu.Unlock()
	}
	return nil
}

// Receiver joins groups and processes what arrives.
type Receiver struct {
	Plan   Plan
	Joined int    // groups 0..Joined-1
	Port   int    // UDP port
	Iface  string // interface to join on ("" = the kernel's choice)
	Local  bool   // unicast only: bind and join nothing
	Syntax string // transfer syntax of the PDUs ("" or "raw": native)
	// ExtraWork is a test-only knob: hashing rounds over each accepted PDU,
	// a known slowdown for checking that comparisons catch one.
	ExtraWork int

	mu      sync.Mutex
	procs   []*Processor
	conns   []*ipv4.PacketConn
	sockets int
}

// Listen opens the sockets and joins the groups: as many sockets as the
// per-socket membership limit needs. It returns the number of sockets.
func (r *Receiver) Listen() (int, error) {
	var ifi *net.Interface
	if r.Iface != "" {
		var err error
		if ifi, err = net.InterfaceByName(r.Iface); err != nil {
			return 0, fmt.Errorf("interface %s: %w", r.Iface, err)
		}
	}
	open := func() (*ipv4.PacketConn, error) {
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
				if serr == nil {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0)
				}
			})
			if err != nil {
				return err
			}
			return serr
		}}
		c, err := lc.ListenPacket(context.Background(), "udp4", fmt.Sprintf("0.0.0.0:%d", r.Port))
		if err != nil {
			return nil, err
		}
		_ = c.(*net.UDPConn).SetReadBuffer(8 << 20)
		pc := ipv4.NewPacketConn(c)
		r.conns = append(r.conns, pc)
		return pc, nil
	}
	pc, err := open()
	if err != nil {
		return 0, err
	}
	if r.Local {
		return 1, nil
	}
	for g := 0; g < r.Joined; g++ {
		grp := &net.UDPAddr{IP: r.Plan.Group(g).AsSlice()}
		err := pc.JoinGroup(ifi, grp)
		if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) {
			if pc, err = open(); err != nil {
				return len(r.conns), err
			}
			err = pc.JoinGroup(ifi, grp)
		}
		if err != nil {
			return len(r.conns), fmt.Errorf("join %v: %w", grp.IP, err)
		}
	}
	return len(r.conns), nil
}

// Run reads every socket until ctx ends.
func (r *Receiver) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, pc := range r.conns {
		p := NewProcessor(r.Plan, r.Joined)
		_ = p.SetSyntax(r.Syntax) // checked by the caller (CheckSyntax); raw on error
		p.extraWork = r.ExtraWork
		p.clock = time.Now
		if r.Local {
			p.joined = r.Plan.Groups
		}
		r.mu.Lock()
		r.procs = append(r.procs, p)
		r.mu.Unlock()
		wg.Add(1)
		go func(pc *ipv4.PacketConn, p *Processor) {
			defer wg.Done()
			r.read(ctx, pc, p)
		}(pc, p)
	}
	<-ctx.Done()
	for _, pc := range r.conns {
		_ = pc.SetReadDeadline(time.Now())
	}
	wg.Wait()
	for _, pc := range r.conns {
		_ = pc.Close()
	}
}

func (r *Receiver) read(ctx context.Context, pc *ipv4.PacketConn, p *Processor) {
	msgs := make([]ipv4.Message, Batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, ReceiveBufferSize)}
	}
	for ctx.Err() == nil {
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			return
		}
		now := time.Now()
		r.mu.Lock()
		for i := 0; i < n; i++ {
			p.Process(msgs[i].Buffers[0][:msgs[i].N], now)
		}
		r.mu.Unlock()
	}
}

// Summary is a snapshot of a receiver.
type Summary struct {
	Stats
	Entities    int
	Timeouts    uint64
	First, Last time.Time
}

// Snapshot merges every socket's stats (safe while running).
func (r *Receiver) Snapshot() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Summary{Stats: newStats()}
	for _, p := range r.procs {
		s.Merge(&p.Stats)
		s.Entities += p.Entities()
		s.Timeouts += p.Timeouts
		if !p.First.IsZero() && (s.First.IsZero() || p.First.Before(s.First)) {
			s.First = p.First
		}
		if p.Last.After(s.Last) {
			s.Last = p.Last
		}
	}
	return s
}
