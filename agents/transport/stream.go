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

	// Batched wake-ups (ExpectMessages), touched by the reading goroutine only.
	lowWater  func(int) error // sets the socket's SO_RCVLOWAT; nil: not a kernel stream socket
	sockRead  int64           // bytes read from c so far
	expectEnd int64           // sockRead at the end of the expected bytes; 0: none expected
	lowat     int             // the SO_RCVLOWAT in force (0 and 1 are the kernel's default)
}

// ReadBatch is the most bytes a reader told to ExpectMessages waits for in the
// kernel before it is woken (SO_RCVLOWAT): 16 KiB took a 1 KiB-message
// stream over loopback from 2.6 to 4.5 Gbit/s on a 2-core VM, 64 KiB gave
// no more.
const ReadBatch = 16 << 10

func newStreamConn(c net.Conn) *streamConn {
	s := &streamConn{c: c}
	s.r = bufio.NewReaderSize(sockReader{s}, 64<<10)
	return s
}

// sockReader is what the stream's buffer reads from: c, counted, with the
// low-water mark kept within the expected bytes still to come.
type sockReader struct{ s *streamConn }

func (r sockReader) Read(p []byte) (int, error) {
	s := r.s
	if s.expectEnd != 0 || s.lowat > 1 {
		s.keepLowWater()
	}
	n, err := s.c.Read(p)
	s.sockRead += int64(n)
	return n, err
}

// ExpectMessages says that the peer's next n messages, size bytes each,
// will come without this side sending anything, as a bulk transfer's
// units do. The kernel then wakes the reader once per
// ReadBatch bytes instead of once per segment, which on a busy loopback
// or a VM costs the sender a wake-up per message. Never more than the
// bytes still to come is waited for, so the last of them are not held;
// a peer that sends fewer (an error in place of the units) must close or
// send the rest, or the reader waits until its deadline. Call it from the
// goroutine that reads; a Conn that cannot batch ignores it.
func (s *streamConn) ExpectMessages(n, size int) {
	if s.lowWater == nil || n <= 0 || size < 0 {
		return
	}
	bytes := int64(n) * int64(FrameHeader+size)
	s.expectEnd = s.sockRead + bytes - int64(s.r.Buffered())
	if s.expectEnd <= s.sockRead {
		s.expectEnd = 0
	}
}

// keepLowWater sets SO_RCVLOWAT to what is still expected, at most
// ReadBatch (1, the default, once nothing is); a system call only when it
// changes, a few times per ExpectMessages.
func (s *streamConn) keepLowWater() {
	want := 1
	if left := s.expectEnd - s.sockRead; left > 0 {
		want = int(min(left, ReadBatch))
	} else {
		s.expectEnd = 0
	}
	if want == s.lowat || (want == 1 && s.lowat == 0) {
		return
	}
	if err := s.lowWater(want); err != nil {
		s.lowWater, s.expectEnd = nil, 0 // not this socket: read as before
		return
	}
	s.lowat = want
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
