package transport

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair is loopPair for plain TCP, the dialled end as its own type.
func tcpPair(t *testing.T) (*tcpConn, Conn) {
	t.Helper()
	c, peer := loopPair(t, "tcp")
	return c.(*tcpConn), peer
}

func lowWaterOf(t *testing.T, c *tcpConn) int {
	t.Helper()
	var v int
	var gerr error
	if err := c.rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

func numbered(i, size int) []byte {
	m := make([]byte, size)
	binary.BigEndian.PutUint32(m, uint32(i))
	return m
}

// Told what comes, the reader waits in the kernel for ReadBatch bytes at a
// time, gets every message in order, and is back on the default low-water
// mark for what follows (a reply it did not announce must not be held).
func TestExpectMessagesBatchesWakeUpsAndRestores(t *testing.T) {
	c, peer := tcpPair(t)
	const n, size = 200, 1000 // 200 x 1004 bytes on the stream, far above ReadBatch
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.ExpectMessages(n, size)
	go func() {
		for i := range n {
			if peer.WriteMsg(numbered(i, size)) != nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
		peer.WriteMsg([]byte("after")) // 9 bytes on the stream: held if the mark stayed up
	}()
	var buf []byte
	for i := range n {
		m, err := c.ReadMsg(buf)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i, n, err)
		}
		if len(m) != size || binary.BigEndian.Uint32(m) != uint32(i) {
			t.Fatalf("message %d: %d bytes, number %d", i, len(m), binary.BigEndian.Uint32(m))
		}
		if i == 0 {
			if got := lowWaterOf(t, c); got != ReadBatch {
				t.Errorf("SO_RCVLOWAT %d while the transfer runs, want %d", got, ReadBatch)
			}
		}
		buf = m
	}
	c.SetDeadline(time.Now().Add(2 * time.Second))
	m, err := c.ReadMsg(nil)
	if err != nil || !bytes.Equal(m, []byte("after")) {
		t.Fatalf("the message after the transfer: %q, %v", m, err)
	}
	if got := lowWaterOf(t, c); got != 1 {
		t.Errorf("SO_RCVLOWAT %d after the transfer, want 1", got)
	}
}

// Fewer bytes than announced, then the end of the stream (what a responder
// does when it fails mid-transfer): the short message is read, not a
// deadline error.
func TestExpectMessagesShortThenCloseIsRead(t *testing.T) {
	c, peer := tcpPair(t)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.ExpectMessages(100, 1000)
	go func() {
		peer.WriteMsg([]byte("error: out of data"))
		time.Sleep(50 * time.Millisecond)
		peer.Close()
	}()
	m, err := c.ReadMsg(nil)
	if err != nil || string(m) != "error: out of data" {
		t.Fatalf("got %q, %v", m, err)
	}
}

// A transfer smaller than ReadBatch waits for exactly its own bytes.
func TestExpectMessagesSmallTransfer(t *testing.T) {
	c, peer := tcpPair(t)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.ExpectMessages(3, 10)
	go func() {
		for i := range 3 {
			peer.WriteMsg(numbered(i, 10))
		}
	}()
	for i := range 3 {
		m, err := c.ReadMsg(nil)
		if err != nil || binary.BigEndian.Uint32(m) != uint32(i) {
			t.Fatalf("message %d: %v %v", i, m, err)
		}
	}
}

// Streams that are not a kernel TCP socket take the call and read as before.
func TestExpectMessagesIgnoredWithoutLowWater(t *testing.T) {
	s := newStreamConn(nil)
	s.ExpectMessages(10, 10)
	if s.expectEnd != 0 {
		t.Fatalf("expectEnd %d on a stream without SO_RCVLOWAT", s.expectEnd)
	}
}
