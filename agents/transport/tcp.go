package transport

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	Register("tcp", &tcpTransport{name: "tcp"})
	Register("mptcp", &tcpTransport{name: "mptcp", mptcp: true})
}

// tcpKnobs are shared by tcp, mptcp and tls.
var tcpKnobs = []Knob{
	{Name: "nodelay", Kind: KnobBool, Default: "true", Help: "TCP_NODELAY: true sends small messages at once (no Nagle)"},
	{Name: "user_timeout", Kind: KnobDuration, Help: "TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before the connection fails, duration (e.g. 2s); empty: kernel default (retries ~15 min)"},
	{Name: "syn_retries", Kind: KnobCount, Help: "TCP_SYNCNT: SYN retransmissions before a connect fails, count 1..127"},
	{Name: "congestion", Kind: KnobName, Help: "TCP_CONGESTION: congestion control algorithm (e.g. cubic, reno, bbr); empty: net.ipv4.tcp_congestion_control"},
	{Name: "sndbuf", Kind: KnobCount, Help: "SO_SNDBUF in bytes (the kernel doubles it); empty: autotuning"},
	{Name: "rcvbuf", Kind: KnobCount, Help: "SO_RCVBUF in bytes (the kernel doubles it); empty: autotuning"},
	dscpKnob,
}

// tcpConfig is tcpKnobs parsed.
type tcpConfig struct {
	nodelay      bool
	userTimeout  int // ms, 0: unset
	synRetries   int
	congestion   string
	sndbuf       int
	rcvbuf       int
	sndSet, rSet bool
	dscp         int
	dscpSet      bool
}

func parseTCPKnobs(name string, m map[string]string) (tcpConfig, error) {
	k, err := parseKnobs(name, tcpKnobs, m)
	if err != nil {
		return tcpConfig{}, err
	}
	var c tcpConfig
	ut, e1 := k.duration("user_timeout")
	var e2, e3, e4, e5, e6 error
	c.nodelay, e2 = k.bool("nodelay")
	c.synRetries, e3 = k.int("syn_retries")
	c.sndbuf, e4 = k.int("sndbuf")
	c.rcvbuf, e5 = k.int("rcvbuf")
	c.dscp, c.dscpSet, e6 = k.dscp()
	if err := firstErr(e1, e2, e3, e4, e5, e6); err != nil {
		return c, err
	}
	if c.synRetries > 127 {
		return c, knobErr("%s: knob syn_retries=%d: at most 127", name, c.synRetries)
	}
	c.userTimeout = int(ut.Milliseconds())
	c.congestion = k.string("congestion")
	c.sndSet, c.rSet = k.has("sndbuf"), k.has("rcvbuf")
	return c, nil
}

// control sets the options on a socket before connect or listen.
func (c tcpConfig) control(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) { serr = c.apply(int(fd)) })
	return firstErr(err, serr)
}

func (c tcpConfig) apply(fd int) error {
	set := func(level, opt, v int, what string) error {
		if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
			return fmt.Errorf("setsockopt %s=%d: %w", what, v, err)
		}
		return nil
	}
	if err := set(unix.IPPROTO_TCP, unix.TCP_NODELAY, b2i(c.nodelay), "TCP_NODELAY"); err != nil {
		return err
	}
	if c.userTimeout > 0 {
		if err := set(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, c.userTimeout, "TCP_USER_TIMEOUT"); err != nil {
			return err
		}
	}
	if c.synRetries > 0 {
		if err := set(unix.IPPROTO_TCP, unix.TCP_SYNCNT, c.synRetries, "TCP_SYNCNT"); err != nil {
			return err
		}
	}
	if c.congestion != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, c.congestion); err != nil {
			return fmt.Errorf("setsockopt TCP_CONGESTION=%s (see net.ipv4.tcp_available_congestion_control): %w", c.congestion, err)
		}
	}
	if c.sndSet {
		if err := set(unix.SOL_SOCKET, unix.SO_SNDBUF, c.sndbuf, "SO_SNDBUF"); err != nil {
			return err
		}
	}
	if c.rSet {
		if err := set(unix.SOL_SOCKET, unix.SO_RCVBUF, c.rcvbuf, "SO_RCVBUF"); err != nil {
			return err
		}
	}
	if c.dscpSet {
		return setDSCP(fd, c.dscp)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tcpTuning reads back what a TCP (or MPTCP) socket runs with.
func tcpTuning(rc syscall.RawConn) map[string]string {
	out := map[string]string{}
	_ = rc.Control(func(fd uintptr) {
		f := int(fd)
		if v, err := unix.GetsockoptInt(f, unix.IPPROTO_TCP, unix.TCP_NODELAY); err == nil {
			out["nodelay"] = strconv.FormatBool(v != 0)
		}
		if s, err := unix.GetsockoptString(f, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
			out["congestion"] = s
		} else {
			out["congestion"] = "unknown (" + err.Error() + ")"
		}
		if v, err := unix.GetsockoptInt(f, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); err == nil {
			out["user_timeout_ms"] = strconv.Itoa(v)
		}
		if v, err := unix.GetsockoptInt(f, unix.IPPROTO_TCP, unix.TCP_SYNCNT); err == nil {
			out["syn_retries"] = strconv.Itoa(v)
		}
		sockBuffers(f, out)
		dscpTuning(f, out)
		if v, err := unix.GetsockoptInt(f, unix.SOL_SOCKET, unix.SO_OOBINLINE); err == nil {
			out["oobinline"] = strconv.FormatBool(v != 0)
		}
		if ti, err := unix.GetsockoptTCPInfo(f, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			out["mss_bytes"] = strconv.Itoa(int(ti.Snd_mss))
		}
	})
	return out
}

// sockBuffers reads SO_SNDBUF and SO_RCVBUF (as the kernel keeps them:
// twice what was asked).
func sockBuffers(fd int, out map[string]string) {
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil {
		out["sndbuf_bytes"] = strconv.Itoa(v)
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
		out["rcvbuf_bytes"] = strconv.Itoa(v)
	}
}

// tcpCounters reads TCP_INFO's retransmission count.
func tcpCounters(rc syscall.RawConn) map[string]uint64 {
	out := map[string]uint64{}
	_ = rc.Control(func(fd uintptr) {
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			out["retransmitted_segments"] = uint64(ti.Total_retrans)
		}
	})
	return out
}

// tcpTransport is plain TCP, or MPTCP when mptcp is set. Messages are
// framed; a stalled peer is noticed only by the caller's deadline and by
// user_timeout when given.
type tcpTransport struct {
	name  string
	mptcp bool
}

func (t *tcpTransport) Name() string { return t.name }

func (t *tcpTransport) Doc() string {
	if t.mptcp {
		return "Multipath TCP (IPPROTO_MPTCP 262, Go's SetMultipathTCP), 4-byte length-prefixed messages; Tuning says whether the connection really is MPTCP; timeouts as tcp"
	}
	return "TCP with TCP_NODELAY, 4-byte length-prefixed messages; loss is the kernel's (RTO, user_timeout knob), a stalled peer ends at the caller's deadline"
}

// Properties: plain TCP has urgent data; MPTCP refuses MSG_OOB.
func (t *tcpTransport) Properties() Properties {
	return Properties{Connected: true, Stream: true, Urgent: !t.mptcp}
}

func (t *tcpTransport) Knobs() []Knob { return tcpKnobs }

func (t *tcpTransport) Available() error {
	if !t.mptcp {
		return nil
	}
	return probeSocket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, "MPTCP", "IPPROTO_MPTCP")
}

// probeSocket opens and closes a socket; its error says the kernel lacks
// the protocol.
func probeSocket(family, typ, proto int, what, protoName string) error {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return fmt.Errorf("%w: kernel has no %s (socket(AF_INET, SOCK_STREAM, %s): %s)", ErrUnavailable, what, protoName, errnoName(err))
	}
	unix.Close(fd)
	return nil
}

// errnoName is "EPROTONOSUPPORT" for that errno, else the error text.
func errnoName(err error) string {
	if e, ok := err.(unix.Errno); ok {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

func (t *tcpTransport) Listen(addr string, o Options) (Listener, error) {
	cfg, err := parseTCPKnobs(t.name, o.Knobs)
	if err != nil {
		return nil, err
	}
	if err := t.Available(); err != nil {
		return nil, err
	}
	lc := net.ListenConfig{Control: cfg.control}
	lc.SetMultipathTCP(t.mptcp)
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listen %s: %w", t.name, addr, err)
	}
	return &netListener{ln: ln, wrap: func(c net.Conn) (Conn, error) { return t.wrap(c.(*net.TCPConn), cfg) }}, nil
}

func (t *tcpTransport) Dial(ctx context.Context, addr string, o Options) (Conn, error) {
	c, cfg, err := dialTCP(ctx, t.name, t.mptcp, addr, o)
	if err != nil {
		return nil, err
	}
	return t.wrap(c, cfg)
}

// dialTCP connects a TCP (or MPTCP) socket with the tcp knobs applied.
func dialTCP(ctx context.Context, name string, mptcp bool, addr string, o Options) (*net.TCPConn, tcpConfig, error) {
	cfg, err := parseTCPKnobs(name, o.Knobs)
	if err != nil {
		return nil, cfg, err
	}
	d := net.Dialer{Control: cfg.control}
	d.SetMultipathTCP(mptcp)
	if o.Source != "" {
		la, err := net.ResolveTCPAddr("tcp", sourceAddr(o.Source))
		if err != nil {
			return nil, cfg, fmt.Errorf("%s source %q: %w", name, o.Source, err)
		}
		d.LocalAddr = la
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, cfg, fmt.Errorf("%s dial %s: %w", name, addr, err)
	}
	return c.(*net.TCPConn), cfg, nil
}

func (t *tcpTransport) wrap(c *net.TCPConn, cfg tcpConfig) (Conn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var aerr error
	if err := rc.Control(func(fd uintptr) { aerr = cfg.apply(int(fd)) }); err != nil || aerr != nil {
		return nil, firstErr(err, aerr)
	}
	sc := newStreamConn(c)
	sc.counters = func() map[string]uint64 { return tcpCounters(rc) }
	sc.dscp = func(d int) error { return setDSCPRaw(rc, d) }
	sc.lowWater = func(n int) error { return setLowWater(rc, n) }
	sc.tuning = func() map[string]string {
		m := tcpTuning(rc)
		if t.mptcp {
			on, err := c.MultipathTCP()
			switch {
			case err != nil:
				m["mptcp"] = "unknown (" + err.Error() + ")"
			case on:
				m["mptcp"] = "true"
			default:
				m["mptcp"] = "false (fell back to TCP)"
			}
		}
		return m
	}
	if t.mptcp {
		return sc, nil
	}
	return &tcpConn{streamConn: sc, rc: rc}, nil
}

// setLowWater sets SO_RCVLOWAT: the kernel reports the socket readable
// (and wakes its reader) once n bytes are queued, or at the end of the
// stream, or when the receive window runs short.
func setLowWater(rc syscall.RawConn, n int) error {
	var serr error
	err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n) })
	return firstErr(err, serr)
}

// tcpConn is a plain TCP Conn: a streamConn with urgent data.
type tcpConn struct {
	*streamConn
	rc syscall.RawConn
}

// WriteUrgent writes the frame of p but its last byte as one write, then
// that byte with MSG_OOB (a partial MSG_OOB send would put the urgent
// pointer short of the message's end).
func (u *tcpConn) WriteUrgent(p []byte) error {
	s := u.streamConn
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b, err := s.frame(p)
	if err != nil {
		return err
	}
	if _, err := s.c.Write(b[:len(b)-1]); err != nil {
		return err
	}
	var serr error
	err = u.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b[len(b)-1:], unix.MSG_OOB, nil)
		return serr != unix.EAGAIN && serr != unix.EINTR
	})
	if err = firstErr(err, serr); err != nil {
		return fmt.Errorf("tcp urgent byte (MSG_OOB): %w", err)
	}
	return nil
}

func (u *tcpConn) UrgentInline() error {
	var serr error
	err := u.rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_OOBINLINE, 1) })
	if err = firstErr(err, serr); err != nil {
		return fmt.Errorf("setsockopt SO_OOBINLINE: %w", err)
	}
	return nil
}
