package transport

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// lossy sits between the UDP initiator and its socket: it drops the first
// `drop` datagrams read (replies lost on the way back) and delivers each
// read datagram `copies` times (duplicated replies).
type lossy struct {
	*net.UDPConn
	mu      sync.Mutex
	drop    int
	copies  int
	pending [][]byte
}

func (l *lossy) Read(b []byte) (int, error) {
	for {
		l.mu.Lock()
		if len(l.pending) > 0 {
			d := l.pending[0]
			l.pending = l.pending[1:]
			l.mu.Unlock()
			return copy(b, d), nil
		}
		l.mu.Unlock()
		n, err := l.UDPConn.Read(b)
		if err != nil {
			return n, err
		}
		l.mu.Lock()
		if l.drop > 0 {
			l.drop--
			l.mu.Unlock()
			continue
		}
		for i := 1; i < l.copies; i++ {
			l.pending = append(l.pending, append([]byte(nil), b[:n]...))
		}
		l.mu.Unlock()
		return n, nil
	}
}

func udpPair(t *testing.T, knobs map[string]string, drop, copies int) (*udpClient, Listener) {
	t.Helper()
	tr, _ := Get("udp")
	ln, err := tr.Listen("127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ln)
	cfg, err := parseUDPKnobs(knobs)
	if err != nil {
		t.Fatal(err)
	}
	u, err := net.DialUDP("udp", nil, ln.Addr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	c := newUDPClient(&lossy{UDPConn: u, drop: drop, copies: copies}, cfg)
	t.Cleanup(func() { c.Close() })
	return c, ln
}

func TestUDPResendsWhenReplyLost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		drop    int
		resends uint64
	}{{"no loss", 0, 0}, {"first reply lost", 1, 1}, {"two replies lost", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := udpPair(t, map[string]string{"timeout": "50ms"}, tc.drop, 1)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			t0 := time.Now()
			if err := c.WriteMsg([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			got, err := c.ReadMsg(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "ping" {
				t.Fatalf("reply %q", got)
			}
			if n := c.Counters()["resends"]; n != tc.resends {
				t.Errorf("resends = %d, want %d", n, tc.resends)
			}
			// 50 ms, then 100 ms: the waits double.
			if want := []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond}[tc.drop]; time.Since(t0) < want {
				t.Errorf("reply after %v, before the backoff of %v", time.Since(t0), want)
			}
		})
	}
}

func TestUDPDuplicateRepliesDiscarded(t *testing.T) {
	c, _ := udpPair(t, nil, 0, 2)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for i, m := range []string{"one", "two", "three"} {
		if err := c.WriteMsg([]byte(m)); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != m {
			t.Fatalf("request %d: reply %q, want %q", i, got, m)
		}
	}
	if n := c.Counters()["stale_replies_discarded"]; n != 2 {
		t.Errorf("stale replies discarded = %d, want 2 (the copies of one and two)", n)
	}
}

func TestUDPGivesUp(t *testing.T) {
	// A responder that never answers: a bound socket nobody reads.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	tr, _ := Get("udp")
	c, err := tr.Dial(context.Background(), pc.LocalAddr().String(), Options{Knobs: map[string]string{"timeout": "10ms", "retries": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	t0 := time.Now()
	c.WriteMsg([]byte("anyone?"))
	_, err = c.ReadMsg(nil)
	if !IsTimeout(err) || !strings.Contains(err.Error(), "after 3 resends") {
		t.Fatalf("err = %v, want a timeout after 3 resends", err)
	}
	if el := time.Since(t0); el < 150*time.Millisecond || el > 2*time.Second { // 10+20+40+80 ms
		t.Errorf("gave up after %v, want about 150 ms", el)
	}
	if got := c.Counters(); got["resends"] != 3 || got["requests_given_up"] != 1 {
		t.Errorf("counters %v", got)
	}
	// The deadline wins over the resend schedule.
	c.SetDeadline(time.Now().Add(30 * time.Millisecond))
	c.WriteMsg([]byte("still?"))
	if _, err := c.ReadMsg(nil); !IsTimeout(err) || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want the deadline", err)
	}
}

func TestUDPTooLarge(t *testing.T) {
	c, _ := udpPair(t, nil, 0, 1)
	if err := c.WriteMsg(make([]byte, UDPMaxMessage+1)); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("err = %v", err)
	}
}
