package converter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Batch is the number of datagrams per recvmmsg call.
const Batch = 64

// ReceiveBuffer bounds one datagram (a bundle is at most 64 KiB).
const ReceiveBuffer = 65536

// listen opens a UDP socket on port (0: any) with SO_REUSEADDR, broadcast
// allowed and an 8 MiB receive buffer.
func listen(port int) (*net.UDPConn, *ipv4.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := lc.ListenPacket(context.Background(), "udp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return nil, nil, fmt.Errorf("listen on UDP port %d: %w", port, err)
	}
	uc := c.(*net.UDPConn)
	_ = uc.SetReadBuffer(8 << 20)
	_ = uc.SetWriteBuffer(8 << 20)
	return uc, ipv4.NewPacketConn(uc), nil
}

// multicastOut makes pc send IP multicast out of iface, TTL 1, not looped back.
func multicastOut(pc *ipv4.PacketConn, ifi *net.Interface) error {
	if ifi != nil {
		if err := pc.SetMulticastInterface(ifi); err != nil {
			return fmt.Errorf("multicast interface %s: %w", ifi.Name, err)
		}
	}
	_ = pc.SetMulticastTTL(1)
	return pc.SetMulticastLoopback(false)
}

func iface(name string) (*net.Interface, error) {
	if name == "" {
		return nil, nil
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("--iface %s: %w", name, err)
	}
	return ifi, nil
}

// joiner holds IP multicast memberships on an interface. The kernel allows
// net.ipv4.igmp_max_memberships (20 by default) per socket, so it opens more
// sockets as needed, on port 0: with IP_MULTICAST_ALL on (the default) the
// receiving socket on the data port gets every group joined in its network
// namespace, whichever socket joined it.
type joiner struct {
	ifi    *net.Interface
	conns  []*ipv4.PacketConn
	closer []*net.UDPConn
	by     map[netip.Addr]*ipv4.PacketConn
}

func newJoiner(ifi *net.Interface, main *ipv4.PacketConn) *joiner {
	return &joiner{ifi: ifi, conns: []*ipv4.PacketConn{main}, by: map[netip.Addr]*ipv4.PacketConn{}}
}

func (j *joiner) join(ip netip.Addr) error {
	if _, ok := j.by[ip]; ok {
		return nil
	}
	grp := &net.UDPAddr{IP: ip.AsSlice()}
	pc := j.conns[len(j.conns)-1]
	err := pc.JoinGroup(j.ifi, grp)
	if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) {
		uc, npc, lerr := listen(0)
		if lerr != nil {
			return lerr
		}
		j.conns, j.closer = append(j.conns, npc), append(j.closer, uc)
		pc = npc
		err = pc.JoinGroup(j.ifi, grp)
	}
	if err != nil {
		return fmt.Errorf("join %v: %w", ip, err)
	}
	j.by[ip] = pc
	return nil
}

func (j *joiner) leave(ip netip.Addr) error {
	pc, ok := j.by[ip]
	if !ok {
		return nil
	}
	delete(j.by, ip)
	return pc.LeaveGroup(j.ifi, &net.UDPAddr{IP: ip.AsSlice()})
}

func (j *joiner) close() {
	for _, c := range j.closer {
		_ = c.Close()
	}
}

// reader reads batches of datagrams from pc and hands each to fn with its
// source and the time the batch was read, until the socket is closed or a
// read deadline passes (then it calls tick, if any, and goes on).
type reader struct {
	msgs []ipv4.Message
}

func newReader() *reader {
	r := &reader{msgs: make([]ipv4.Message, Batch)}
	for i := range r.msgs {
		r.msgs[i].Buffers = [][]byte{make([]byte, ReceiveBuffer)}
	}
	return r
}

// read returns false when the socket is done (closed); on a deadline it
// returns true having read nothing.
func (r *reader) read(pc *ipv4.PacketConn, fn func(b []byte, src netip.AddrPort, now time.Time)) bool {
	n, err := pc.ReadBatch(r.msgs, 0)
	if err != nil {
		return errors.Is(err, syscall.EAGAIN) || isTimeout(err)
	}
	now := time.Now()
	for i := 0; i < n; i++ {
		m := &r.msgs[i]
		var src netip.AddrPort
		if ua, ok := m.Addr.(*net.UDPAddr); ok {
			src = ua.AddrPort()
			src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
		}
		fn(m.Buffers[0][:m.N], src, now)
	}
	return true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func udpAddr(ap netip.AddrPort) *net.UDPAddr { return net.UDPAddrFromAddrPort(ap) }

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
