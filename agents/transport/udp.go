package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func init() { Register("udp", udpTransport{}) }

// Datagram layout: a 4-byte big-endian sequence number, then the message.
// The initiator numbers its requests; the responder answers with the
// number of the request it answers.
const (
	udpHeader = 4
	// UDPMaxMessage is the largest message in one IPv4 UDP datagram
	// (65507 bytes of payload) after the sequence number.
	UDPMaxMessage = 65507 - udpHeader
)

var udpKnobs = []Knob{
	{Name: "timeout", Kind: KnobDuration, Default: "200ms", Help: "time to wait for a reply before the first resend, duration; doubles at each resend"},
	{Name: "retries", Kind: KnobCount, Default: "5", Help: "resends of a request before it is a timeout, count"},
	{Name: "sndbuf", Kind: KnobCount, Help: "SO_SNDBUF in bytes (the kernel doubles it); empty: kernel default"},
	{Name: "rcvbuf", Kind: KnobCount, Help: "SO_RCVBUF in bytes (the kernel doubles it); empty: kernel default"},
	dscpKnob,
}

// udpTransport carries request/response datagrams. The initiator waits
// timeout (200 ms) for the reply, then resends the same request, doubling
// the wait each time, at most retries (5) times: with the defaults a
// request is given up after 0.2+0.4+0.8+1.6+3.2+6.4 = 12.6 s, or earlier
// at the caller's deadline. An ICMP port unreachable (ECONNREFUSED on the
// connected socket) counts as one more loss, not the end of the path. Replies carry the request's sequence number;
// a reply to an earlier request (a duplicate, or late after a resend) is
// discarded and counted. There is no stream: a responder may answer a
// request with one datagram only, so bulk_get is refused.
type udpTransport struct{}

type udpConfig struct {
	timeout        time.Duration
	retries        int
	sndbuf, rcvbuf int
	sndSet, rSet   bool
	dscp           int
	dscpSet        bool
}

func parseUDPKnobs(m map[string]string) (udpConfig, error) {
	k, err := parseKnobs("udp", udpKnobs, m)
	if err != nil {
		return udpConfig{}, err
	}
	var c udpConfig
	var e1, e2, e3, e4, e5 error
	c.timeout, e1 = k.duration("timeout")
	c.retries, e2 = k.int("retries")
	c.sndbuf, e3 = k.int("sndbuf")
	c.rcvbuf, e4 = k.int("rcvbuf")
	c.dscp, c.dscpSet, e5 = k.dscp()
	if err := firstErr(e1, e2, e3, e4, e5); err != nil {
		return c, err
	}
	if c.timeout <= 0 {
		return c, knobErr("udp: knob timeout must be > 0")
	}
	c.sndSet, c.rSet = k.has("sndbuf"), k.has("rcvbuf")
	return c, nil
}

// setup applies the buffer sizes and the mark to a new socket.
func (c udpConfig) setup(u *net.UDPConn) error {
	if c.dscpSet {
		rc, err := u.SyscallConn()
		if err != nil {
			return err
		}
		if err := setDSCPRaw(rc, c.dscp); err != nil {
			return fmt.Errorf("udp: %w", err)
		}
	}
	if c.sndSet {
		if err := u.SetWriteBuffer(c.sndbuf); err != nil {
			return fmt.Errorf("udp sndbuf: %w", err)
		}
	}
	if c.rSet {
		if err := u.SetReadBuffer(c.rcvbuf); err != nil {
			return fmt.Errorf("udp rcvbuf: %w", err)
		}
	}
	return nil
}

func (udpTransport) Name() string { return "udp" }

func (udpTransport) Doc() string {
	return "UDP request/response datagrams (4-byte sequence number + message, at most 65503 bytes); resend after 200 ms doubling, 5 resends, stale replies discarded; no bulk_get, no connect_disconnect"
}

func (udpTransport) Properties() Properties { return Properties{} }
func (udpTransport) Knobs() []Knob          { return udpKnobs }
func (udpTransport) Available() error       { return nil }

func (udpTransport) Listen(addr string, o Options) (Listener, error) {
	cfg, err := parseUDPKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udp listen %s: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("udp listen %s: %w", addr, err)
	}
	if err := cfg.setup(pc); err != nil {
		pc.Close()
		return nil, err
	}
	l := &udpListener{pc: pc, cfg: cfg, peers: map[netip.AddrPort]*udpPeer{}, maxPeers: udpMaxPeers, accept: make(chan *udpPeer, 64), done: make(chan struct{})}
	go l.run()
	return l, nil
}

func (udpTransport) Dial(ctx context.Context, addr string, o Options) (Conn, error) {
	cfg, err := parseUDPKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udp dial %s: %w", addr, err)
	}
	var la *net.UDPAddr
	if o.Source != "" {
		if la, err = net.ResolveUDPAddr("udp", sourceAddr(o.Source)); err != nil {
			return nil, fmt.Errorf("udp source %q: %w", o.Source, err)
		}
	}
	u, err := net.DialUDP("udp", la, ra)
	if err != nil {
		return nil, fmt.Errorf("udp dial %s: %w", addr, err)
	}
	if err := cfg.setup(u); err != nil {
		u.Close()
		return nil, err
	}
	return newUDPClient(u, cfg), nil
}

// packetIO is the initiator's connected datagram socket (a *net.UDPConn;
// tests put a lossy fake in between).
type packetIO interface {
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	SetReadDeadline(t time.Time) error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	Close() error
}

// udpClient is the initiator's side: WriteMsg sends a request, ReadMsg
// waits for its reply, resending on timeouts.
type udpClient struct {
	io  packetIO
	cfg udpConfig

	mu       sync.Mutex
	seq      uint32 // of the outstanding request
	last     []byte // its datagram
	pending  bool   // a request waits for its reply
	gaveUp   bool   // its resends are used up
	deadline time.Time
	kick     chan struct{} // a request was sent
	closed   chan struct{}
	once     sync.Once

	resent   int       // resends of the outstanding request
	resendAt time.Time // when it is sent again

	rbuf                                    []byte
	retries, dups, timeouts, runts, refused uint64
}

func newUDPClient(p packetIO, cfg udpConfig) *udpClient {
	return &udpClient{io: p, cfg: cfg, kick: make(chan struct{}, 1), closed: make(chan struct{}), rbuf: make([]byte, 65536)}
}

func (u *udpClient) WriteMsg(p []byte) error {
	if len(p) > UDPMaxMessage {
		return fmt.Errorf("udp: message of %d bytes does not fit one datagram (max %d)", len(p), UDPMaxMessage)
	}
	u.mu.Lock()
	u.seq++
	u.last = binary.BigEndian.AppendUint32(u.last[:0], u.seq)
	u.last = append(u.last, p...)
	u.pending, u.gaveUp, u.resent = true, false, 0
	u.resendAt = time.Now().Add(u.cfg.timeout)
	err := u.refusal(u.io.Write(u.last))
	u.mu.Unlock()
	select {
	case u.kick <- struct{}{}:
	default:
	}
	return err
}

// ReadMsg returns the reply to the outstanding request. With none
// outstanding it waits for WriteMsg (a reader goroutine may run ahead of
// its writer) until the deadline.
func (u *udpClient) ReadMsg(buf []byte) ([]byte, error) {
	for {
		u.mu.Lock()
		pending, gaveUp, seq, dl, resendAt := u.pending, u.gaveUp, u.seq, u.deadline, u.resendAt
		u.mu.Unlock()
		if !pending || gaveUp {
			if err := u.waitKick(dl); err != nil {
				return nil, err
			}
			continue
		}
		at := resendAt
		if !dl.IsZero() && dl.Before(at) {
			at = dl
		}
		if err := u.io.SetReadDeadline(at); err != nil {
			return nil, err
		}
		n, err := u.io.Read(u.rbuf)
		if errors.Is(err, syscall.ECONNREFUSED) {
			u.mu.Lock()
			u.refused++
			u.mu.Unlock()
			continue
		}
		if err != nil {
			if !IsTimeout(err) {
				return nil, err
			}
			if err := u.resend(seq, dl); err != nil {
				return nil, err
			}
			continue
		}
		if n < udpHeader {
			u.mu.Lock()
			u.runts++
			u.mu.Unlock()
			continue
		}
		got := binary.BigEndian.Uint32(u.rbuf)
		u.mu.Lock()
		if got != u.seq || !u.pending {
			u.dups++
			u.mu.Unlock()
			continue
		}
		u.pending = false
		u.mu.Unlock()
		return append(buf[:0], u.rbuf[udpHeader:n]...), nil
	}
}

// resend sends request seq again when its wait is over, or gives up.
func (u *udpClient) resend(seq uint32, dl time.Time) error {
	now := time.Now()
	if !dl.IsZero() && !now.Before(dl) {
		return &timeoutError{"udp: deadline exceeded waiting for the reply to request " + strconv.FormatUint(uint64(seq), 10)}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seq != seq || now.Before(u.resendAt) { // a new request went out, or not yet time
		return nil
	}
	if u.resent >= u.cfg.retries {
		u.gaveUp = true
		u.timeouts++
		return &timeoutError{fmt.Sprintf("udp: no reply to request %d after %d resends (first wait %v, doubling)", seq, u.cfg.retries, u.cfg.timeout)}
	}
	u.resent++
	u.retries++
	u.resendAt = now.Add(u.cfg.timeout << u.resent)
	return u.refusal(u.io.Write(u.last))
}

// refusal counts an ICMP port unreachable reported on a send and drops it:
// for datagrams it is one more loss (the peer may be back for the resend),
// not the end of the path. Call with u.mu held.
func (u *udpClient) refusal(_ int, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		u.refused++
		return nil
	}
	return err
}

func (u *udpClient) waitKick(dl time.Time) error {
	var tc <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-u.kick:
		return nil
	case <-u.closed:
		return net.ErrClosed
	case <-tc:
		return &timeoutError{"udp: deadline exceeded with no request outstanding"}
	}
}

func (u *udpClient) SetDeadline(t time.Time) error {
	u.mu.Lock()
	u.deadline = t
	u.mu.Unlock()
	select { // wake a reader waiting for a request so it sees the deadline
	case u.kick <- struct{}{}:
	default:
	}
	return nil
}

func (u *udpClient) LocalAddr() net.Addr  { return u.io.LocalAddr() }
func (u *udpClient) RemoteAddr() net.Addr { return u.io.RemoteAddr() }

func (u *udpClient) Tuning() map[string]string {
	m := map[string]string{"timeout": u.cfg.timeout.String(), "retries": strconv.Itoa(u.cfg.retries), "backoff": "doubling"}
	if uc, ok := u.io.(*net.UDPConn); ok {
		udpBuffers(uc, m)
		if rc, err := uc.SyscallConn(); err == nil {
			dscpTuningRaw(rc, m)
		}
	}
	return m
}

func (u *udpClient) SetDSCP(d int) error {
	if d < 0 || d > 63 {
		return fmt.Errorf("dscp %d: want 0..63", d)
	}
	uc, ok := u.io.(*net.UDPConn)
	if !ok {
		return errors.New("udp: this connection has no socket to mark")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	return setDSCPRaw(rc, d)
}

func (u *udpClient) Counters() map[string]uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return map[string]uint64{"resends": u.retries, "stale_replies_discarded": u.dups, "requests_given_up": u.timeouts, "runt_datagrams": u.runts, "icmp_refused": u.refused}
}

func (u *udpClient) Close() error {
	u.once.Do(func() { close(u.closed) })
	return u.io.Close()
}

// udpListener demultiplexes datagrams by source address into peers, one
// Conn each. A peer idle for udpPeerIdle ends (its ReadMsg returns io.EOF).
type udpListener struct {
	pc       *net.UDPConn
	cfg      udpConfig
	mu       sync.Mutex
	peers    map[netip.AddrPort]*udpPeer
	maxPeers int
	accept   chan *udpPeer
	done     chan struct{}
	once     sync.Once
}

const udpPeerIdle = 2 * time.Minute

// udpMaxPeers bounds the initiators one listener serves at once: a
// datagram from a new source past it is dropped, as one meeting a full
// backlog is, so datagrams from ever new source ports cannot grow the peer
// table (and a queue of up to 256 datagrams each) without end.
const udpMaxPeers = 1024

func (l *udpListener) run() {
	buf := make([]byte, 65536)
	for {
		n, from, err := l.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < udpHeader {
			continue
		}
		d := append([]byte(nil), buf[:n]...)
		l.mu.Lock()
		p := l.peers[from]
		if p == nil {
			if len(l.peers) >= l.maxPeers {
				l.mu.Unlock()
				continue
			}
			p = &udpPeer{l: l, addr: from, in: make(chan []byte, 256), gone: make(chan struct{}), tos: -1}
			select {
			case l.accept <- p:
				l.peers[from] = p
			default: // nobody accepting: drop, as a full backlog would
				l.mu.Unlock()
				continue
			}
		}
		l.mu.Unlock()
		select {
		case p.in <- d:
		default: // the peer's queue is full: a drop, as in a full socket buffer
		}
	}
}

func (l *udpListener) Accept() (Conn, error) {
	select {
	case p := <-l.accept:
		return p, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *udpListener) Addr() net.Addr { return l.pc.LocalAddr() }

func (l *udpListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.pc.Close()
}

// udpPeer is the responder's side of one initiator. Its replies leave
// through the listener's socket, shared with the other peers, so its own
// mark (SetDSCP) rides on each datagram as a control message.
type udpPeer struct {
	l        *udpListener
	addr     netip.AddrPort
	in       chan []byte
	gone     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	seq      uint32
	deadline time.Time
	wbuf     []byte
	tos      int // -1: the socket's
	oob      []byte
}

func (p *udpPeer) ReadMsg(buf []byte) ([]byte, error) {
	p.mu.Lock()
	dl := p.deadline
	p.mu.Unlock()
	wait := udpPeerIdle
	if !dl.IsZero() {
		wait = time.Until(dl)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d := <-p.in:
		p.mu.Lock()
		p.seq = binary.BigEndian.Uint32(d)
		p.mu.Unlock()
		return append(buf[:0], d[udpHeader:]...), nil
	case <-t.C:
		if dl.IsZero() {
			return nil, io.EOF
		}
		return nil, &timeoutError{"udp: deadline exceeded"}
	case <-p.gone:
		return nil, net.ErrClosed
	case <-p.l.done:
		return nil, net.ErrClosed
	}
}

// WriteMsg answers the last request read.
func (p *udpPeer) WriteMsg(b []byte) error {
	if len(b) > UDPMaxMessage {
		return fmt.Errorf("udp: message of %d bytes does not fit one datagram (max %d)", len(b), UDPMaxMessage)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wbuf = binary.BigEndian.AppendUint32(p.wbuf[:0], p.seq)
	p.wbuf = append(p.wbuf, b...)
	if p.tos < 0 {
		_, err := p.l.pc.WriteToUDPAddrPort(p.wbuf, p.addr)
		return err
	}
	_, _, err := p.l.pc.WriteMsgUDPAddrPort(p.wbuf, p.oob, p.addr)
	return err
}

func (p *udpPeer) SetDSCP(d int) error {
	if d < 0 || d > 63 {
		return fmt.Errorf("dscp %d: want 0..63", d)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tos = d << 2
	p.oob = appendTOSCmsg(p.oob[:0], p.tos, p.addr.Addr().Unmap().Is4())
	return nil
}

func (p *udpPeer) SetDeadline(t time.Time) error {
	p.mu.Lock()
	p.deadline = t
	p.mu.Unlock()
	return nil
}

func (p *udpPeer) LocalAddr() net.Addr  { return p.l.pc.LocalAddr() }
func (p *udpPeer) RemoteAddr() net.Addr { return net.UDPAddrFromAddrPort(p.addr) }

func (p *udpPeer) Tuning() map[string]string {
	m := map[string]string{}
	udpBuffers(p.l.pc, m)
	p.mu.Lock()
	tos := p.tos
	p.mu.Unlock()
	if tos >= 0 {
		m["dscp"] = strconv.Itoa(tos >> 2)
	} else if rc, err := p.l.pc.SyscallConn(); err == nil {
		dscpTuningRaw(rc, m)
	}
	return m
}

func (p *udpPeer) Counters() map[string]uint64 { return map[string]uint64{} }

func (p *udpPeer) Close() error {
	p.once.Do(func() {
		close(p.gone)
		p.l.mu.Lock()
		if p.l.peers[p.addr] == p {
			delete(p.l.peers, p.addr)
		}
		p.l.mu.Unlock()
	})
	return nil
}

func udpBuffers(u *net.UDPConn, m map[string]string) {
	rc, err := u.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { sockBuffers(int(fd), m) })
}
