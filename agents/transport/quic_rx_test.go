package transport

import (
	"context"
	"testing"
	"time"

	"github.com/quic-go/quic-go/logging"
)

func TestRxHeldCountsEachOctetOnceUntilRead(t *testing.T) {
	r := newRxHeld()
	held := func() int { return r.level.Cur }
	frame := func(off, n int) []logging.Frame {
		return []logging.Frame{&logging.StreamFrame{StreamID: 4, Offset: logging.ByteCount(off), Length: logging.ByteCount(n)}}
	}
	r.frames(frame(1000, 500)) // after a gap: held
	r.frames(frame(1000, 500)) // a duplicate: not again
	r.frames(frame(1200, 800)) // overlapping: only 1500..2000 new
	if held() != 1000 {
		t.Fatalf("held %d, want 1000 (1000..2000)", held())
	}
	r.frames(frame(0, 1000)) // the gap filled
	if held() != 2000 {
		t.Fatalf("held %d, want 2000", held())
	}
	r.read(4, 1500)
	if held() != 500 {
		t.Fatalf("held %d after reading 1500, want 500", held())
	}
	r.frames(frame(0, 1500)) // a retransmission of what was read
	if held() != 500 {
		t.Fatalf("held %d after a late duplicate, want 500", held())
	}
	r.read(4, 500)
	r.read(8, 10) // a read the tracer has not reported yet (it runs after quic-go queued the frames)
	r.frames([]logging.Frame{&logging.StreamFrame{StreamID: 8, Offset: 0, Length: 10}})
	if held() != 0 || r.level.Max != 2000 {
		t.Fatalf("held %d max %d, want 0 and 2000", held(), r.level.Max)
	}
	if s := r.streams[4]; len(s.got) != 0 || s.read != 2000 {
		t.Fatalf("stream 4: spans %v read %d", s.got, s.read)
	}
}

// A receiver that reads late holds what arrived meanwhile; the counters
// say so through the Conn.
func TestQUICReceiveBufferCounters(t *testing.T) {
	tr, _ := Get("quic")
	ln, err := tr.Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const units, size = 20, 10 << 10
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.ReadMsg(nil); err != nil {
			return
		}
		for range units {
			if c.WriteMsg(make([]byte, size)) != nil {
				return
			}
		}
		c.ReadMsg(nil) // until the initiator closes
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tr.Dial(ctx, ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteMsg([]byte("go")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the units arrive and wait
	for i := range units {
		if _, err := c.ReadMsg(nil); err != nil {
			t.Fatalf("unit %d: %v", i, err)
		}
	}
	m := c.Counters()
	t.Logf("counters %v", m)
	// all 20 units (204,880 octets with their prefixes) arrived within the
	// stream's receive window while nothing was read; the Conn's own
	// 64 KiB read buffer took the first of them out of quic-go's hands
	if got := m["rx_held_max_octets"]; got < 100<<10 || got > units*(size+4) {
		t.Errorf("rx_held_max_octets %d, want 100 KiB..%d", got, units*(size+4))
	}
	us, area := m["rx_held_microseconds"], m["rx_held_octet_microseconds"]
	if us < 250_000 {
		t.Errorf("rx_held_microseconds %d, want the 300 ms wait at least", us)
	}
	if avg := float64(area) / float64(us); avg <= 0 || avg > float64(m["rx_held_max_octets"]) {
		t.Errorf("average held %.0f octets, want in (0, max]", avg)
	}
}
