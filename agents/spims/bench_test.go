package spims

import (
	"context"
	"io"
	"net"
	"sort"
	"testing"
	"time"

	"protolab/agents/transport"
)

// Figures, not gates: the bench output is the record (see the commit
// bodies for measured values and the machine).

func dialTCP(b *testing.B, addr string) transport.Conn {
	b.Helper()
	tr, _ := transport.Get("tcp")
	c, err := tr.Dial(context.Background(), addr, transport.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// pingPong is the floor: a hand-written Go TCP ping-pong of n bytes with
// TCP_NODELAY (Go's default), no framing, no headers.
type pingPong struct {
	c   net.Conn
	buf []byte
}

func newPingPong(b *testing.B, n int) *pingPong {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, n)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); ln.Close() })
	return &pingPong{c: c, buf: make([]byte, n)}
}

func (p *pingPong) once(b *testing.B) {
	if _, err := p.c.Write(p.buf); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(p.c, p.buf); err != nil {
		b.Fatal(err)
	}
}

func rrConfig(n int) RRConfig {
	return RRConfig{Limits: Limits{Iterations: n, Timeout: 10 * time.Second}, Size: Const(32, Bytes)}
}

// BenchmarkRequestResponse32 is request_response of 32 B over loopback TCP
// (spims) next to the hand-written ping-pong (floor), each on its own.
func BenchmarkRequestResponse32(b *testing.B) {
	b.Run("spims-tcp", func(b *testing.B) {
		c := dialTCP(b, responder(b, "tcp", "127.0.0.1"))
		b.ResetTimer()
		out, err := RequestResponse(context.Background(), []*Path{{Conn: c}}, rrConfig(b.N), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(out.Rec.Stats().P50)*1e9, "p50-ns")
	})
	b.Run("pingpong-tcp", func(b *testing.B) {
		p := newPingPong(b, 32)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.once(b)
		}
	})
}

// BenchmarkRequestResponseRatio runs spims and the ping-pong in
// alternating blocks of 500 round trips (so drift hits both) and reports
// each one's p50 and their ratio.
func BenchmarkRequestResponseRatio(b *testing.B) {
	c := dialTCP(b, responder(b, "tcp", "127.0.0.1"))
	p := newPingPong(b, 32)
	var floor []float64
	var spims Recorder
	b.ResetTimer()
	for done := 0; done < b.N; done += 500 {
		n := min(500, b.N-done)
		out, err := RequestResponse(context.Background(), []*Path{{Conn: c}}, rrConfig(n), nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range out.Rec.Samples() {
			spims.Add(time.Duration(v*1e9), time.Time{})
		}
		for i := 0; i < n; i++ {
			t0 := time.Now()
			p.once(b)
			floor = append(floor, time.Since(t0).Seconds())
		}
	}
	b.StopTimer()
	sort.Float64s(floor)
	f50 := floor[len(floor)/2]
	s50 := float64(spims.Stats().P50)
	b.ReportMetric(s50*1e9, "spims-p50-ns")
	b.ReportMetric(f50*1e9, "pingpong-p50-ns")
	b.ReportMetric(s50/f50, "ratio")
}

// BenchmarkBulkGetTCP is bulk_get throughput over loopback TCP (SPIMS's
// 1000 units of 1 KiB, and 256 units of 64 KiB); MB/s is at the receiver.
func BenchmarkBulkGetTCP(b *testing.B) {
	for _, tc := range []struct {
		name        string
		count, unit int
	}{{"1000x1KiB", 1000, 1024}, {"256x64KiB", 256, 64 << 10}} {
		b.Run(tc.name, func(b *testing.B) {
			c := dialTCP(b, responder(b, "tcp", "127.0.0.1"))
			b.SetBytes(int64(tc.count * tc.unit))
			b.ResetTimer()
			out, err := BulkGet(context.Background(), c, BulkConfig{Limits: Limits{Iterations: b.N, Timeout: 10 * time.Second}, Count: tc.count, UnitSize: tc.unit}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(Summarize(out.Bulk.Sender).P50.f()/1e6, "sender-p50-MB/s")
		})
	}
}

// BenchmarkConnectDisconnectTCP is dial + close over loopback TCP, and
// with one 32 B exchange.
func BenchmarkConnectDisconnectTCP(b *testing.B) {
	for _, exchange := range []bool{false, true} {
		name := "dial-close"
		if exchange {
			name = "dial-32B-close"
		}
		b.Run(name, func(b *testing.B) {
			addr := responder(b, "tcp", "127.0.0.1")
			tr, _ := transport.Get("tcp")
			b.ResetTimer()
			out, err := ConnectDisconnect(context.Background(), tr, addr, transport.Options{}, CDConfig{RRConfig: rrConfig(b.N), Exchange: exchange}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(out.Rec.Count())/out.Elapsed.Seconds(), "connects/s")
		})
	}
}

func (f Float) f() float64 { return float64(f) }
