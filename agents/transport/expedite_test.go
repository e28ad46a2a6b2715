package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopPair is a dialed Conn of transport name on loopback and the one its
// listener accepted, after one exchange; closed when the test ends.
func loopPair(t *testing.T, name string) (Conn, Conn) {
	t.Helper()
	tr, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tr.Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return pair(t, tr, ln, Options{})
}

func TestPropertiesMatchTheConns(t *testing.T) {
	for _, name := range []string{"tcp", "quic", "tls"} {
		t.Run(name, func(t *testing.T) {
			tr, _ := Get(name)
			c, s := loopPair(t, name)
			_, urgent := c.(UrgentConn)
			_, multi := s.(MultistreamConn)
			if p := tr.Properties(); p.Urgent != urgent || p.Multistream != multi {
				t.Errorf("%+v, Conns: urgent %v, multistream %v", p, urgent, multi)
			}
		})
	}
}

// Inline, an urgent message is read in its place in the stream, whole.
func TestUrgentMessageInline(t *testing.T) {
	c, s := loopPair(t, "tcp")
	if err := s.(UrgentConn).UrgentInline(); err != nil {
		t.Fatal(err)
	}
	if s.Tuning()["oobinline"] != "true" {
		t.Errorf("tuning %v: oobinline not read back", s.Tuning())
	}
	want := [][]byte{bytes.Repeat([]byte{7}, 5000), []byte("expedited 16 B.!"), []byte("after")}
	if err := c.WriteMsg(want[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.(UrgentConn).WriteUrgent(want[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMsg(want[2]); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		m, err := s.ReadMsg(nil)
		if err != nil || !bytes.Equal(m, w) {
			t.Fatalf("message %d: %q (%v), want %q", i, m, err, w)
		}
	}
}

// Not inline, the kernel hands the message's last byte over as the
// out-of-band byte: the urgent pointer marks the message's end.
func TestUrgentByteIsOutOfBand(t *testing.T) {
	c, s := loopPair(t, "tcp")
	if err := c.(UrgentConn).WriteUrgent([]byte("urgent!Z")); err != nil {
		t.Fatal(err)
	}
	rc, err := s.(*tcpConn).c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for end := time.Now().Add(5 * time.Second); got == nil && time.Now().Before(end); {
		var rerr error
		rc.Control(func(fd uintptr) {
			b := make([]byte, 1)
			var n int
			n, _, rerr = unix.Recvfrom(int(fd), b, unix.MSG_OOB|unix.MSG_DONTWAIT)
			if rerr == nil {
				got = b[:n]
			}
		})
		if rerr != nil && !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINVAL) {
			t.Fatal(rerr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if string(got) != "Z" {
		t.Fatalf("out-of-band byte %q, want the message's last, Z", got)
	}
}

// A second QUIC stream carries its own messages beside the first.
func TestQUICSecondStream(t *testing.T) {
	c, s := loopPair(t, "quic")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c2, err := c.(MultistreamConn).OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.WriteMsg([]byte("on the second")); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMsg([]byte("on the first")); err != nil {
		t.Fatal(err)
	}
	s2, err := s.(MultistreamConn).AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.SetDeadline(time.Now().Add(5 * time.Second))
	if m, err := s2.ReadMsg(nil); err != nil || string(m) != "on the second" {
		t.Fatalf("second stream: %q, %v", m, err)
	}
	if m, err := s.ReadMsg(nil); err != nil || string(m) != "on the first" {
		t.Fatalf("first stream: %q, %v", m, err)
	}
	if err := s2.WriteMsg([]byte("back")); err != nil {
		t.Fatal(err)
	}
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	if m, err := c2.ReadMsg(nil); err != nil || string(m) != "back" {
		t.Fatalf("second stream back: %q, %v", m, err)
	}
	// closing the second stream leaves the connection's first one working
	c2.Close()
	if err := c.WriteMsg([]byte("still")); err != nil {
		t.Fatal(err)
	}
	if m, err := s.ReadMsg(nil); err != nil || string(m) != "still" {
		t.Fatalf("first stream after the second closed: %q, %v", m, err)
	}
}
