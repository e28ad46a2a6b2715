package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/logging"
)

func init() { Register("quic", quicTransport{}) }

var quicKnobs = []Knob{
	{Name: "handshake_timeout", Kind: KnobDuration, Default: "5s", Help: "HandshakeIdleTimeout: give up a handshake silent this long, duration"},
	{Name: "idle_timeout", Kind: KnobDuration, Default: "30s", Help: "MaxIdleTimeout: close a connection silent this long, duration"},
	{Name: "keepalive", Kind: KnobDuration, Help: "KeepAlivePeriod: send PINGs this often when idle, duration; empty: none"},
	{Name: "sndbuf", Kind: KnobCount, Help: "SO_SNDBUF of the UDP socket in bytes (the kernel doubles it); empty: quic-go's choice"},
	{Name: "rcvbuf", Kind: KnobCount, Help: "SO_RCVBUF of the UDP socket in bytes (the kernel doubles it); empty: quic-go's choice (it asks for 7 MiB)"},
	dscpKnob,
}

// quicTransport is QUIC (quic-go) with TLS 1.3 as in tls. A Conn is one
// QUIC connection carrying one long bidirectional stream, opened by the
// initiator, with the same 4-byte length-prefixed messages as TCP: so a
// message lost in the network holds up the ones behind it, as on TCP, and
// the comparison with tcp is about the protocol, not a different use.
// Loss recovery is quic-go's (PTO, RFC 9002); a silent peer ends the
// connection after idle_timeout. quic-go marks ECN per datagram, which
// would wipe a DSCP set on the socket: the socket is a markedUDPConn that
// keeps it.
type quicTransport struct{}

type quicSetup struct {
	cfg            *quic.Config
	sndbuf, rcvbuf int
	sndSet, rSet   bool
	dscp           int
	dscpSet        bool
	lost           *atomic.Uint64
	rx             *rxRegistry
}

func parseQUICKnobs(m map[string]string) (quicSetup, error) {
	k, err := parseKnobs("quic", quicKnobs, m)
	if err != nil {
		return quicSetup{}, err
	}
	var s quicSetup
	hs, e1 := k.duration("handshake_timeout")
	idle, e2 := k.duration("idle_timeout")
	ka, e3 := k.duration("keepalive")
	var e4, e5, e6 error
	s.sndbuf, e4 = k.int("sndbuf")
	s.rcvbuf, e5 = k.int("rcvbuf")
	s.dscp, s.dscpSet, e6 = k.dscp()
	if err := firstErr(e1, e2, e3, e4, e5, e6); err != nil {
		return s, err
	}
	s.sndSet, s.rSet = k.has("sndbuf"), k.has("rcvbuf")
	s.lost, s.rx = new(atomic.Uint64), &rxRegistry{}
	lost, reg := s.lost, s.rx
	s.cfg = &quic.Config{
		HandshakeIdleTimeout: hs, MaxIdleTimeout: idle, KeepAlivePeriod: ka,
		Tracer: func(ctx context.Context, _ logging.Perspective, _ quic.ConnectionID) *logging.ConnectionTracer {
			rx, forget := reg.tracer(ctx)
			return &logging.ConnectionTracer{
				LostPacket: func(logging.EncryptionLevel, logging.PacketNumber, logging.PacketLossReason) { lost.Add(1) },
				ReceivedShortHeaderPacket: func(_ *logging.ShortHeader, _ logging.ByteCount, _ logging.ECN, fs []logging.Frame) {
					rx.frames(fs)
				},
				Close: forget,
			}
		},
	}
	return s, nil
}

func (s quicSetup) socket(laddr *net.UDPAddr) (*markedUDPConn, error) {
	u, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, err
	}
	if s.sndSet {
		err = u.SetWriteBuffer(s.sndbuf)
	}
	if s.rSet && err == nil {
		err = u.SetReadBuffer(s.rcvbuf)
	}
	if err != nil {
		u.Close()
		return nil, fmt.Errorf("quic socket buffers: %w", err)
	}
	if s.dscpSet {
		rc, err := u.SyscallConn()
		if err == nil {
			err = setDSCPRaw(rc, s.dscp)
		}
		if err != nil {
			u.Close()
			return nil, fmt.Errorf("quic: %w", err)
		}
	}
	return newMarkedUDPConn(u, s.dscp, s.dscpSet), nil
}

func (quicTransport) Name() string { return "quic" }

func (quicTransport) Doc() string {
	return "QUIC (quic-go) with TLS 1.3, one long bidirectional stream per connection carrying length-prefixed messages; loss recovery is quic-go's, idle_timeout 30 s; Dial includes the handshake"
}

func (quicTransport) Properties() Properties {
	return Properties{Connected: true, Stream: true, Multistream: true}
}
func (quicTransport) Knobs() []Knob    { return quicKnobs }
func (quicTransport) Available() error { return nil }

func (quicTransport) Listen(addr string, o Options) (Listener, error) {
	s, err := parseQUICKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("quic listen %s: %w", addr, err)
	}
	u, err := s.socket(ua)
	if err != nil {
		return nil, fmt.Errorf("quic listen %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: u}
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, NextProtos: []string{alpn}}, s.cfg)
	if err != nil {
		tr.Close()
		u.Close()
		return nil, fmt.Errorf("quic listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &quicListener{ln: ln, tr: tr, u: u, s: s, ctx: ctx, cancel: cancel, ch: make(chan Conn, 64)}
	go l.run()
	return l, nil
}

func (quicTransport) Dial(ctx context.Context, addr string, o Options) (Conn, error) {
	s, err := parseQUICKnobs(o.Knobs)
	if err != nil {
		return nil, err
	}
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("quic dial %s: %w", addr, err)
	}
	var la *net.UDPAddr
	if o.Source != "" {
		if la, err = net.ResolveUDPAddr("udp", sourceAddr(o.Source)); err != nil {
			return nil, fmt.Errorf("quic source %q: %w", o.Source, err)
		}
	}
	u, err := s.socket(la)
	if err != nil {
		return nil, fmt.Errorf("quic dial %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: u}
	tc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, NextProtos: []string{alpn}}
	qc, err := tr.Dial(ctx, ra, tc, s.cfg)
	if err != nil {
		tr.Close()
		u.Close()
		return nil, fmt.Errorf("quic dial %s: %w", addr, err)
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		qc.CloseWithError(0, "")
		tr.Close()
		u.Close()
		return nil, fmt.Errorf("quic open stream to %s: %w", addr, err)
	}
	return quicWrap(qc, st, u, s, true, func() {
		tr.Close()
		u.Close()
	}), nil
}

// quicStream makes a stream a net.Conn for streamConn.
type quicStream struct {
	quic.Stream
	qc quic.Connection
	rx *rxHeld // the connection's receive accounting; nil: none
}

// Read reports the peer's orderly close (application error 0) as io.EOF,
// as TCP would.
func (q quicStream) Read(b []byte) (int, error) {
	n, err := q.Stream.Read(b)
	if q.rx != nil {
		q.rx.read(q.StreamID(), n)
	}
	var ae *quic.ApplicationError
	if errors.As(err, &ae) && ae.Remote && ae.ErrorCode == 0 {
		err = io.EOF
	}
	return n, err
}

func (q quicStream) LocalAddr() net.Addr  { return q.qc.LocalAddr() }
func (q quicStream) RemoteAddr() net.Addr { return q.qc.RemoteAddr() }

// quicWrap makes a Conn of a connection's stream; own says the socket u
// is the connection's alone (the initiator's), not the listener's.
func quicWrap(qc quic.Connection, st quic.Stream, u *markedUDPConn, s quicSetup, own bool, after func()) Conn {
	rx := s.rx.of(qc)
	sc := newStreamConn(quicStream{st, qc, rx})
	remote, _ := qc.RemoteAddr().(*net.UDPAddr)
	var once sync.Once
	sc.close = func() error {
		once.Do(func() {
			st.Close()
			qc.CloseWithError(0, "")
			if !own && remote != nil {
				u.forget(remote)
			}
			if after != nil {
				after()
			}
		})
		return nil
	}
	sc.dscp = func(d int) error {
		if !own {
			if remote == nil {
				return fmt.Errorf("quic: peer address %v is not UDP", qc.RemoteAddr())
			}
			u.mark(remote, d)
			return nil
		}
		rc, err := u.SyscallConn()
		if err != nil {
			return err
		}
		if err := setDSCPRaw(rc, d); err != nil {
			return fmt.Errorf("quic: %w", err)
		}
		u.mark(nil, d)
		return nil
	}
	sc.tuning = func() map[string]string {
		cs := qc.ConnectionState()
		m := map[string]string{
			"quic_version":     cs.Version.String(),
			"tls_version":      tls.VersionName(cs.TLS.Version),
			"tls_cipher_suite": tls.CipherSuiteName(cs.TLS.CipherSuite),
			"gso":              strconv.FormatBool(cs.GSO),
			"streams":          "one bidirectional stream per connection, more on request",
			"idle_timeout":     s.cfg.MaxIdleTimeout.String(),
		}
		udpBuffers(u.UDPConn, m)
		if d := u.dscpOf(remote); !own && remote != nil && d >= 0 {
			m["dscp"] = strconv.Itoa(d)
		} else if rc, err := u.SyscallConn(); err == nil {
			dscpTuningRaw(rc, m)
		}
		return m
	}
	sc.counters = func() map[string]uint64 {
		// Losses of every connection made with these options (one per Conn
		// on the initiator; the listener's connections share one count);
		// the stream octets this connection held for its reader (rxHeld).
		m := map[string]uint64{"packets_lost": s.lost.Load()}
		if rx != nil {
			rx.counters(m)
		}
		return m
	}
	return &quicConn{streamConn: sc, qc: qc, rx: rx}
}

// quicConn is the Conn of a connection's first stream; more streams of the
// same connection are Conns of their own (OpenStream, AcceptStream) whose
// Close ends only that stream.
type quicConn struct {
	*streamConn
	qc quic.Connection
	rx *rxHeld
}

func (q *quicConn) OpenStream(ctx context.Context) (Conn, error) {
	st, err := q.qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("quic open stream: %w", err)
	}
	return q.substream(st), nil
}

func (q *quicConn) AcceptStream(ctx context.Context) (Conn, error) {
	st, err := q.qc.AcceptStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("quic accept stream: %w", err)
	}
	return q.substream(st), nil
}

// substream shares the connection's tuning, counters and mark.
func (q *quicConn) substream(st quic.Stream) Conn {
	sc := newStreamConn(quicStream{st, q.qc, q.rx})
	sc.tuning, sc.counters, sc.dscp = q.tuning, q.counters, q.streamConn.dscp
	var once sync.Once
	sc.close = func() error {
		once.Do(func() {
			st.CancelRead(0)
			st.Close()
		})
		return nil
	}
	return sc
}

// quicListener accepts connections and, for each, its first stream; a
// connection whose initiator never sends is never handed out.
type quicListener struct {
	ln     *quic.Listener
	tr     *quic.Transport
	u      *markedUDPConn
	s      quicSetup
	ctx    context.Context
	cancel context.CancelFunc
	ch     chan Conn
}

func (l *quicListener) run() {
	for {
		qc, err := l.ln.Accept(l.ctx)
		if err != nil {
			return
		}
		go func() {
			st, err := qc.AcceptStream(l.ctx)
			if err != nil {
				qc.CloseWithError(0, "")
				return
			}
			select {
			case l.ch <- quicWrap(qc, st, l.u, l.s, false, nil):
			case <-l.ctx.Done():
				qc.CloseWithError(0, "")
			}
		}()
	}
}

func (l *quicListener) Accept() (Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.ctx.Done():
		return nil, fmt.Errorf("quic accept: %w", net.ErrClosed)
	}
}

func (l *quicListener) Addr() net.Addr { return l.ln.Addr() }

func (l *quicListener) Close() error {
	l.cancel()
	err := l.ln.Close()
	return errors.Join(err, l.tr.Close(), l.u.Close())
}
