package transport

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseDSCP(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"46", 46, true}, {"0", 0, true}, {"63", 63, true}, {"ef", 46, true}, {"EF", 46, true}, {" af41 ", 34, true},
		{"cs1", 8, true}, {"cs7", 56, true}, {"af11", 10, true}, {"af43", 38, true}, {"le", 1, true}, {"default", 0, true},
		{"64", 0, false}, {"-1", 0, false}, {"af44", 0, false}, {"", 0, false}, {"0x2e", 0, false},
	} {
		got, err := ParseDSCP(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDSCP(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	_, err := ParseDSCP("gold")
	if err == nil || !strings.Contains(err.Error(), "0..63") || !strings.Contains(err.Error(), "af41") {
		t.Errorf("error %v does not say what is wanted", err)
	}
	tr, _ := Get("tcp")
	if err := CheckKnobs(tr, map[string]string{"dscp": "gold"}); err == nil || !strings.Contains(err.Error(), "knob dscp") {
		t.Errorf("CheckKnobs: %v", err)
	}
}

// pair dials ln with o, and returns both ends after one exchange (a QUIC
// listener hands a connection out only once its initiator has sent).
func pair(t *testing.T, tr Transport, ln Listener, o Options) (Conn, Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	acc := make(chan Conn, 1)
	go func() { // reading at once: a TLS responder's handshake runs in its first read
		c, err := ln.Accept()
		if err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err = c.ReadMsg(nil); err != nil {
				c.Close()
			}
		}
		if err != nil {
			c = nil
		}
		acc <- c
	}()
	c, err := tr.Dial(ctx, ln.Addr().String(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteMsg([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	var s Conn
	select {
	case s = <-acc:
	case <-ctx.Done():
	}
	if s == nil {
		t.Fatal("nothing accepted")
	}
	t.Cleanup(func() { s.Close() })
	return c, s
}

// listenOn listens on host:0, skipping when the transport or the host's
// IPv6 loopback is missing.
func listenOn(t *testing.T, tr Transport, host string, o Options) Listener {
	t.Helper()
	if err := tr.Available(); err != nil {
		t.Skipf("%s: %v", tr.Name(), err)
	}
	ln, err := tr.Listen(net.JoinHostPort(host, "0"), o)
	if err != nil {
		if host == "::1" && strings.Contains(err.Error(), "cannot assign") {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// The initiator's knob marks its socket; the responder's Conn marks what
// it sends with SetDSCP; Tuning reads both back (getsockopt IP_TOS or
// IPV6_TCLASS on the connection's socket; for udp and quic responders,
// whose socket is shared, the per-peer mark).
func TestDSCPBothEnds(t *testing.T) {
	for _, name := range Names() {
		for _, host := range []string{"127.0.0.1", "::1"} {
			t.Run(name+"/"+host, func(t *testing.T) {
				tr, _ := Get(name)
				ln := listenOn(t, tr, host, Options{})
				c, s := pair(t, tr, ln, Options{Knobs: map[string]string{"dscp": "ef"}})
				if got := c.Tuning()["dscp"]; got != "46" {
					t.Errorf("initiator dscp %q, want 46 (ef)", got)
				}
				if got := s.Tuning()["dscp"]; got != "0" {
					t.Errorf("responder dscp %q before SetDSCP, want 0", got)
				}
				if err := s.SetDSCP(34); err != nil {
					t.Fatal(err)
				}
				if got := s.Tuning()["dscp"]; got != "34" {
					t.Errorf("responder dscp %q, want 34 (af41)", got)
				}
				if err := c.SetDSCP(10); err != nil {
					t.Fatal(err)
				}
				if got := c.Tuning()["dscp"]; got != "10" {
					t.Errorf("initiator dscp %q after SetDSCP(10)", got)
				}
				if err := s.SetDSCP(64); err == nil {
					t.Error("SetDSCP(64) accepted")
				}
				// Where a Conn has a socket of its own, the raw getsockopt.
				for _, e := range []struct {
					who  string
					c    Conn
					want int
				}{{"initiator", c, 10}, {"responder", s, 34}} {
					sk := ownSocket(e.c)
					if sk == nil {
						continue
					}
					rc, err := sk.SyscallConn()
					if err != nil {
						t.Fatal(err)
					}
					level, opt := unix.IPPROTO_IP, unix.IP_TOS
					if host == "::1" {
						level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
					}
					var v int
					rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), level, opt) })
					if err != nil || v>>2 != e.want {
						t.Errorf("%s getsockopt: %d (dscp %d), %v; want dscp %d", e.who, v, v>>2, err, e.want)
					}
				}
			})
		}
	}
}

// ownSocket is the socket of a Conn that has one to itself (tcp, tls,
// mptcp, the udp initiator), else nil.
func ownSocket(c Conn) syscall.Conn {
	if tc, ok := c.(*tcpConn); ok {
		c = tc.streamConn
	}
	switch v := c.(type) {
	case *udpClient:
		return v.io.(*net.UDPConn)
	case *streamConn:
		nc := v.c
		if tc, ok := nc.(*tls.Conn); ok {
			nc = tc.NetConn()
		}
		if sc, ok := nc.(*net.TCPConn); ok {
			return sc
		}
	}
	return nil
}

// serve listens with the dscp knob: every accepted connection is marked.
func TestDSCPListenerKnob(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			tr, _ := Get(name)
			ln := listenOn(t, tr, "127.0.0.1", Options{Knobs: map[string]string{"dscp": "cs1"}})
			c, s := pair(t, tr, ln, Options{})
			if got := s.Tuning()["dscp"]; got != "8" {
				t.Errorf("responder dscp %q, want 8 (cs1)", got)
			}
			if got := c.Tuning()["dscp"]; got != "0" {
				t.Errorf("initiator dscp %q, want 0", got)
			}
		})
	}
}

// tosRelay forwards datagrams between one client and a server, recording
// the TOS / traffic class byte each arrived with, per direction.
type tosRelay struct {
	front, back *net.UDPConn
	mu          sync.Mutex
	up, down    []int // client to server, server to client
}

func newTOSRelay(t *testing.T, host string, server net.Addr) *tosRelay {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(host)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp", nil, server.(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	r := &tosRelay{front: front, back: back}
	for _, u := range []*net.UDPConn{front, back} {
		rc, _ := u.SyscallConn()
		rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		})
	}
	var client *net.UDPAddr
	var cmu sync.Mutex
	go r.pump(front, func(b []byte, from *net.UDPAddr) {
		cmu.Lock()
		client = from
		cmu.Unlock()
		back.Write(b)
	}, &r.up)
	go r.pump(back, func(b []byte, _ *net.UDPAddr) {
		cmu.Lock()
		to := client
		cmu.Unlock()
		if to != nil {
			front.WriteToUDP(b, to)
		}
	}, &r.down)
	t.Cleanup(func() { front.Close(); back.Close() })
	return r
}

func (r *tosRelay) pump(u *net.UDPConn, fwd func([]byte, *net.UDPAddr), rec *[]int) {
	b, oob := make([]byte, 65536), make([]byte, 256)
	for {
		n, oobn, _, from, err := u.ReadMsgUDP(b, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		tos := -1
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if (m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS) || (m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS) {
				tos = int(m.Data[0])
			}
		}
		r.mu.Lock()
		*rec = append(*rec, tos)
		r.mu.Unlock()
		fwd(b[:n], from)
	}
}

// take returns and clears what was recorded.
func (r *tosRelay) take() (up, down []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	up, down = r.up, r.down
	r.up, r.down = nil, nil
	return up, down
}

// On udp and quic the responder's socket is shared: its marks ride on each
// datagram, and quic-go's ECN marks must not wipe them. Checked on the
// wire, at a relay that reads each datagram's TOS byte.
func TestDSCPOnTheWire(t *testing.T) {
	for _, name := range []string{"udp", "quic"} {
		for _, host := range []string{"127.0.0.1", "::1"} {
			t.Run(name+"/"+host, func(t *testing.T) {
				tr, _ := Get(name)
				ln := listenOn(t, tr, host, Options{})
				relay := newTOSRelay(t, host, ln.Addr())
				relayed := &relayListener{Listener: ln, addr: relay.front.LocalAddr()}
				c, s := pair(t, tr, relayed, Options{Knobs: map[string]string{"dscp": "ef"}})
				if err := s.SetDSCP(34); err != nil {
					t.Fatal(err)
				}
				if err := s.WriteMsg([]byte("marked")); err != nil {
					t.Fatal(err)
				}
				if _, err := c.ReadMsg(nil); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond) // let the acknowledgements pass
				first, _ := relay.take()          // from the handshake on, some with quic-go's ECT(0)
				for _, tos := range first {
					if tos>>2 != 46 {
						t.Errorf("initiator datagram with TOS 0x%02x, want DSCP 46: all %v", tos, first)
						break
					}
				}
				for i := 0; i < 5; i++ {
					if err := c.WriteMsg([]byte("ping")); err != nil {
						t.Fatal(err)
					}
					if _, err := s.ReadMsg(nil); err != nil {
						t.Fatal(err)
					}
					if err := s.WriteMsg([]byte("pong")); err != nil {
						t.Fatal(err)
					}
					if _, err := c.ReadMsg(nil); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(50 * time.Millisecond)
				up, down := relay.take()
				if len(up) == 0 || len(down) == 0 {
					t.Fatalf("relay saw %d up, %d down", len(up), len(down))
				}
				for _, tos := range up {
					if tos>>2 != 46 {
						t.Errorf("initiator datagram with TOS 0x%02x, want DSCP 46: all %v", tos, up)
						break
					}
				}
				for _, tos := range down {
					if tos>>2 != 34 {
						t.Errorf("responder datagram with TOS 0x%02x, want DSCP 34: all %v", tos, down)
						break
					}
				}
				t.Logf("TOS from the start %v, then up %v down %v", first, up, down)
			})
		}
	}
}

// relayListener reports the relay's address as its own, so that pair dials
// through the relay.
type relayListener struct {
	Listener
	addr net.Addr
}

func (l *relayListener) Addr() net.Addr { return l.addr }

// quic-go's ECN control messages: a 1-byte IP_TOS, a 4-byte IPV6_TCLASS,
// after a packet-info message; the DSCP goes in, the ECN bits stay.
func TestMarkOOB(t *testing.T) {
	pktinfo := appendTOSCmsg(nil, 0, true) // any message first
	pktinfo[unix.SizeofCmsghdr-4] = unix.IP_PKTINFO
	v4 := append(append([]byte(nil), pktinfo...), make([]byte, unix.CmsgSpace(1))...)
	h := v4[len(pktinfo):]
	copy(h, appendTOSCmsg(nil, 0, true)[:unix.SizeofCmsghdr])
	if unix.SizeofCmsghdr == 16 {
		binary.NativeEndian.PutUint64(h, uint64(unix.CmsgLen(1)))
	} else {
		binary.NativeEndian.PutUint32(h, uint32(unix.CmsgLen(1)))
	}
	h[unix.CmsgLen(0)] = 2 // ECT(0)
	if !markOOB(v4, 46<<2) || h[unix.CmsgLen(0)] != 46<<2|2 {
		t.Errorf("IPv4: TOS 0x%02x, want 0x%02x", h[unix.CmsgLen(0)], 46<<2|2)
	}
	v6 := appendTOSCmsg(append([]byte(nil), pktinfo...), 1, false) // ECT(1)
	if !markOOB(v6, 34<<2) {
		t.Fatal("IPV6_TCLASS message not found")
	}
	msgs, err := unix.ParseSocketControlMessage(v6)
	if err != nil || len(msgs) != 2 || binary.NativeEndian.Uint32(msgs[1].Data) != 34<<2|1 {
		t.Errorf("IPv6: %v %+v", err, msgs)
	}
	if markOOB(pktinfo, 8) || markOOB(nil, 8) {
		t.Error("marked a datagram without a TOS message")
	}
}
