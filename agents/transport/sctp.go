package transport

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/mdlayher/socket"
	"golang.org/x/sys/unix"
)

func init() { Register("sctp", sctpTransport{}) }

// SCTP constants of linux/sctp.h (x/sys/unix has none).
const (
	ipprotoSCTP    = 132 // IPPROTO_SCTP, also the SOL_SCTP option level
	sctpRTOInfo    = 0   // SCTP_RTOINFO: struct sctp_rtoinfo
	sctpAssocInfo  = 1   // SCTP_ASSOCINFO: struct sctp_assocparams
	sctpNoDelay    = 3   // SCTP_NODELAY: int
	sctpWriteChunk = 32 << 10
)

var sctpKnobs = []Knob{
	{Name: "nodelay", Kind: KnobBool, Default: "true", Help: "SCTP_NODELAY: true sends small messages at once (no Nagle-like bundling delay)"},
	{Name: "rto_initial", Kind: KnobDuration, Help: "SCTP_RTOINFO srto_initial, duration (ms resolution); empty: net.sctp.rto_initial (3 s)"},
	{Name: "rto_min", Kind: KnobDuration, Help: "SCTP_RTOINFO srto_min, duration; empty: net.sctp.rto_min (1 s)"},
	{Name: "rto_max", Kind: KnobDuration, Help: "SCTP_RTOINFO srto_max, duration; empty: net.sctp.rto_max (60 s)"},
	{Name: "max_retrans", Kind: KnobCount, Help: "SCTP_ASSOCINFO sasoc_asocmaxrxt: retransmissions before the association fails, count; empty: net.sctp.association_max_retrans (10)"},
	{Name: "sndbuf", Kind: KnobCount, Help: "SO_SNDBUF in bytes (the kernel doubles it); empty: kernel default"},
	{Name: "rcvbuf", Kind: KnobCount, Help: "SO_RCVBUF in bytes (the kernel doubles it); empty: kernel default"},
	dscpKnob,
}

// sctpTransport is SCTP, one-to-one style (SOCK_STREAM, IPPROTO_SCTP),
// carrying the same length-prefixed messages as TCP on its one stream.
// Timeouts are SCTP's own (RTO knobs, max_retrans); a stalled peer ends at
// the caller's deadline. A kernel without SCTP (no sctp module) makes
// Available say so.
type sctpTransport struct{}

type sctpConfig struct {
	nodelay                bool
	rtoInit, rtoMin, rtoMx time.Duration
	maxRetrans             int
	sndbuf, rcvbuf         int
	sndSet, rSet           bool
	dscp                   int
	dscpSet                bool
}

func parseSCTPKnobs(m map[string]string) (sctpConfig, error) {
	k, err := parseKnobs("sctp", sctpKnobs, m)
	if err != nil {
		return sctpConfig{}, err
	}
	var c sctpConfig
	var e [8]error
	c.nodelay, e[0] = k.bool("nodelay")
	c.rtoInit, e[1] = k.duration("rto_initial")
	c.rtoMin, e[2] = k.duration("rto_min")
	c.rtoMx, e[3] = k.duration("rto_max")
	c.maxRetrans, e[4] = k.int("max_retrans")
	c.sndbuf, e[5] = k.int("sndbuf")
	c.rcvbuf, e[6] = k.int("rcvbuf")
	c.dscp, c.dscpSet, e[7] = k.dscp()
	if err := firstErr(e[:]...); err != nil {
		return c, err
	}
	if c.maxRetrans > 65535 {
		return c, knobErr("sctp: knob max_retrans=%d: at most 65535", c.maxRetrans)
	}
	c.sndSet, c.rSet = k.has("sndbuf"), k.has("rcvbuf")
	return c, nil
}

// rtoInfo encodes struct sctp_rtoinfo {s32 assoc_id; u32 initial, max,
// min} in ms, host byte order; 0 leaves a value as it is.
func (c sctpConfig) rtoInfo() []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[4:], uint32(c.rtoInit.Milliseconds()))
	binary.NativeEndian.PutUint32(b[8:], uint32(c.rtoMx.Milliseconds()))
	binary.NativeEndian.PutUint32(b[12:], uint32(c.rtoMin.Milliseconds()))
	return b
}

// assocParams encodes struct sctp_assocparams {s32 assoc_id; u16
// asocmaxrxt, number_peer_destinations; u32 peer_rwnd, local_rwnd,
// cookie_life}; 0 leaves a value as it is.
func (c sctpConfig) assocParams() []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint16(b[4:], uint16(c.maxRetrans))
	return b
}

func (c sctpConfig) apply(s *socket.Conn) error {
	rc, err := s.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		f := int(fd)
		setInt := func(level, opt, v int, what string) {
			if serr == nil {
				if err := unix.SetsockoptInt(f, level, opt, v); err != nil {
					serr = fmt.Errorf("setsockopt %s=%d: %w", what, v, err)
				}
			}
		}
		setBytes := func(opt int, v []byte, what string) {
			if serr == nil {
				if err := unix.SetsockoptString(f, ipprotoSCTP, opt, string(v)); err != nil {
					serr = fmt.Errorf("setsockopt %s: %w", what, err)
				}
			}
		}
		setInt(ipprotoSCTP, sctpNoDelay, b2i(c.nodelay), "SCTP_NODELAY")
		if c.rtoInit > 0 || c.rtoMin > 0 || c.rtoMx > 0 {
			setBytes(sctpRTOInfo, c.rtoInfo(), "SCTP_RTOINFO")
		}
		if c.maxRetrans > 0 {
			setBytes(sctpAssocInfo, c.assocParams(), "SCTP_ASSOCINFO")
		}
		if c.sndSet {
			setInt(unix.SOL_SOCKET, unix.SO_SNDBUF, c.sndbuf, "SO_SNDBUF")
		}
		if c.rSet {
			setInt(unix.SOL_SOCKET, unix.SO_RCVBUF, c.rcvbuf, "SO_RCVBUF")
		}
		if c.dscpSet && serr == nil {
			serr = setDSCP(f, c.dscp)
		}
	})
	return firstErr(err, serr)
}

func (sctpTransport) Name() string { return "sctp" }

func (sctpTransport) Doc() string {
	return "SCTP one-to-one style (SOCK_STREAM, IPPROTO_SCTP 132), length-prefixed messages; loss and path failure are SCTP's (rto_*, max_retrans knobs); needs the kernel's sctp module"
}

func (sctpTransport) Properties() Properties { return Properties{Connected: true, Stream: true} }
func (sctpTransport) Knobs() []Knob          { return sctpKnobs }

func (sctpTransport) Available() error {
	return probeSocket(unix.AF_INET, unix.SOCK_STREAM, ipprotoSCTP, "SCTP", "IPPROTO_SCTP")
}

// sockaddr resolves host:port to a unix.Sockaddr and its family.
func sockaddr(addr string) (unix.Sockaddr, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("port %q: %w", port, err)
	}
	var ip netip.Addr
	if host == "" {
		ip = netip.IPv4Unspecified()
	} else if ip, err = netip.ParseAddr(host); err != nil {
		ips, lerr := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if lerr != nil || len(ips) == 0 {
			return nil, 0, fmt.Errorf("address %q: %w", host, firstErr(lerr, err))
		}
		ip = ips[0]
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(p), Addr: ip.As4()}, unix.AF_INET, nil
	}
	return &unix.SockaddrInet6{Port: int(p), Addr: ip.As16()}, unix.AF_INET6, nil
}

func (t sctpTransport) socket(family int, cfg sctpConfig) (*socket.Conn, error) {
	if err := t.Available(); err != nil {
		return nil, err
	}
	s, err := socket.Socket(family, unix.SOCK_STREAM, ipprotoSCTP, "sctp", nil)
	if err != nil {
		return nil, fmt.Errorf("sctp socket: %w", err)
	}
	if err := cfg.apply(s); err != nil {
		s.Close()
		return nil, fmt.Errorf("sctp: %w", err)
	}
	return s, nil
}

func (t sctpTransport) Listen(addr string, o Options) (Listener, error) {
	cfg, err := parseSCTPKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	sa, family, err := sockaddr(addr)
	if err != nil {
		return nil, fmt.Errorf("sctp listen %s: %w", addr, err)
	}
	s, err := t.socket(family, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.SetsockoptInt(unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Bind(sa); err != nil {
		s.Close()
		return nil, fmt.Errorf("sctp bind %s: %w", addr, err)
	}
	if err := s.Listen(128); err != nil {
		s.Close()
		return nil, fmt.Errorf("sctp listen %s: %w", addr, err)
	}
	return &sctpListener{s: s, cfg: cfg}, nil
}

func (t sctpTransport) Dial(ctx context.Context, addr string, o Options) (Conn, error) {
	cfg, err := parseSCTPKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	sa, family, err := sockaddr(addr)
	if err != nil {
		return nil, fmt.Errorf("sctp dial %s: %w", addr, err)
	}
	s, err := t.socket(family, cfg)
	if err != nil {
		return nil, err
	}
	if o.Source != "" {
		la, _, err := sockaddr(sourceAddr(o.Source))
		if err == nil {
			err = s.Bind(la)
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sctp source %q: %w", o.Source, err)
		}
	}
	if _, err := s.Connect(ctx, sa); err != nil {
		s.Close()
		return nil, fmt.Errorf("sctp dial %s: %w", addr, err)
	}
	return sctpWrap(s, cfg), nil
}

type sctpListener struct {
	s   *socket.Conn
	cfg sctpConfig
}

func (l *sctpListener) Accept() (Conn, error) {
	for {
		c, _, err := l.s.Accept(context.Background(), 0)
		if err != nil {
			return nil, err
		}
		sc := sctpWrap(c, l.cfg)
		// The listener's mark again: whether the kernel copies it to an
		// accepted association is not checked here (no SCTP on the test host).
		if l.cfg.dscpSet && sc.SetDSCP(l.cfg.dscp) != nil {
			c.Close() // dropped, as netListener drops one it cannot set up
			continue
		}
		return sc, nil
	}
}

func (l *sctpListener) Addr() net.Addr {
	sa, _ := l.s.Getsockname()
	return sctpAddrOf(sa)
}

func (l *sctpListener) Close() error { return l.s.Close() }

// sctpNetConn makes a socket.Conn a net.Conn, writing in chunks (a single
// SCTP message may not exceed the send buffer).
type sctpNetConn struct {
	*socket.Conn
	laddr, raddr net.Addr
}

func (c sctpNetConn) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Conn.Write(b[n:min(len(b), n+sctpWriteChunk)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c sctpNetConn) LocalAddr() net.Addr  { return c.laddr }
func (c sctpNetConn) RemoteAddr() net.Addr { return c.raddr }

func sctpWrap(s *socket.Conn, cfg sctpConfig) Conn {
	la, _ := s.Getsockname()
	ra, _ := s.Getpeername()
	sc := newStreamConn(sctpNetConn{s, sctpAddrOf(la), sctpAddrOf(ra)})
	sc.tuning = func() map[string]string {
		m := map[string]string{}
		if rc, err := s.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) {
				if v, err := unix.GetsockoptInt(int(fd), ipprotoSCTP, sctpNoDelay); err == nil {
					m["nodelay"] = strconv.FormatBool(v != 0)
				}
				sockBuffers(int(fd), m)
				dscpTuning(int(fd), m)
			})
		}
		for k, d := range map[string]time.Duration{"rto_initial_requested": cfg.rtoInit, "rto_min_requested": cfg.rtoMin, "rto_max_requested": cfg.rtoMx} {
			if d > 0 {
				m[k] = d.String()
			}
		}
		if cfg.maxRetrans > 0 {
			m["max_retrans_requested"] = strconv.Itoa(cfg.maxRetrans)
		}
		return m
	}
	sc.dscp = func(d int) error {
		rc, err := s.SyscallConn()
		if err != nil {
			return err
		}
		return setDSCPRaw(rc, d)
	}
	return sc
}

// sctpAddr is an SCTP endpoint address.
type sctpAddr struct{ ap netip.AddrPort }

func (a sctpAddr) Network() string { return "sctp" }
func (a sctpAddr) String() string  { return a.ap.String() }

func sctpAddrOf(sa unix.Sockaddr) net.Addr {
	switch v := sa.(type) {
	case *unix.SockaddrInet4:
		return sctpAddr{netip.AddrPortFrom(netip.AddrFrom4(v.Addr), uint16(v.Port))}
	case *unix.SockaddrInet6:
		return sctpAddr{netip.AddrPortFrom(netip.AddrFrom16(v.Addr), uint16(v.Port))}
	}
	return sctpAddr{}
}
