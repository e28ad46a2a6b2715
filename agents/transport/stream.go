package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// streamConn frames messages on a byte stream (TCP, TLS, MPTCP, SCTP, a
// QUIC stream): each is a 4-byte big-endian length and the bytes.
type streamConn struct {
	c        net.Conn
	r        *bufio.Reader
	dec      Decoder
	wmu      sync.Mutex
	wbuf     []byte
	tuning   func() map[string]string
	counters func() map[string]uint64
	dscp     func(int) error
	close    func() error // nil: c.Close
}

func newStreamConn(c net.Conn) *streamConn {
	return &streamConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// frame is p with its length prefix in the buffer kept between writes (kept
// only up to 1 MiB, so one large message does not pin its buffer). Under wmu.
func (s *streamConn) frame(p []byte) ([]byte, error) {
	b, err := AppendFrame(s.wbuf[:0], p)
	if err != nil {
		return nil, err
	}
	if cap(b) <= 1<<20 {
		s.wbuf = b
	}
	return b, nil
}

// WriteMsg writes prefix and message in one Write (one TLS record, one
// segment train) from a buffer kept between calls.
func (s *streamConn) WriteMsg(p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b, err := s.frame(p)
	if err != nil {
		return err
	}
	_, err = s.c.Write(b)
	return err
}

func (s *streamConn) ReadMsg(buf []byte) ([]byte, error) { return s.dec.Next(s.r, buf) }

func (s *streamConn) SetDeadline(t time.Time) error { return s.c.SetDeadline(t) }
func (s *streamConn) LocalAddr() net.Addr           { return s.c.LocalAddr() }
func (s *streamConn) RemoteAddr() net.Addr          { return s.c.RemoteAddr() }

func (s *streamConn) Tuning() map[string]string {
	if s.tuning == nil {
		return map[string]string{}
	}
	return s.tuning()
}

func (s *streamConn) Counters() map[string]uint64 {
	if s.counters == nil {
		return map[string]uint64{}
	}
	return s.counters()
}

func (s *streamConn) SetDSCP(d int) error {
	if d < 0 || d > 63 {
		return fmt.Errorf("dscp %d: want 0..63", d)
	}
	if s.dscp == nil {
		return errors.New("this connection cannot be marked with a DSCP")
	}
	return s.dscp(d)
}

func (s *streamConn) Close() error {
	if s.close != nil {
		return s.close()
	}
	return s.c.Close()
}

// netListener adapts a net.Listener whose connections are wrapped by wrap.
type netListener struct {
	ln   net.Listener
	wrap func(net.Conn) (Conn, error)
}

func (l *netListener) Accept() (Conn, error) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return nil, err
		}
		sc, err := l.wrap(c)
		if err != nil {
			c.Close() // a connection we cannot set up is dropped, not the listener
			continue
		}
		return sc, nil
	}
}

func (l *netListener) Addr() net.Addr { return l.ln.Addr() }
func (l *netListener) Close() error   { return l.ln.Close() }

// sourceAddr turns Options.Source ("10.0.1.1" or "10.0.1.1:0") into
// host:port.
func sourceAddr(src string) string {
	if src == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(src); err == nil {
		return src
	}
	return net.JoinHostPort(src, "0")
}
