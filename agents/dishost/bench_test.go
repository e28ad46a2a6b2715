package dishost

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"protolab/agents/dis"
	"protolab/agents/internal/measure"
)

// The target: generator and receiver each at least 200k PDUs/s on
// one core with 144-byte Entity State PDUs (146-byte messages). Run with
// `make bench` (go test -run ^$ -bench . -cpu 2 ./dishost; the socket
// benchmarks pin their threads to one core each).

func esGenerator(b testing.TB) *Generator {
	g, err := NewGenerator(GenConfig{Plan: plan(2048), Entities: 1000, Mix: Mix{dis.TypeEntityState: 1}})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// pin locks the calling goroutine to its thread and the thread to cpu; it
// returns false (and pins nothing) when the machine has no such CPU.
func pin(b *testing.B, cpu int) bool {
	if runtime.NumCPU() <= cpu {
		return false
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		b.Logf("pinning to CPU %d: %v", cpu, err)
		return false
	}
	return true
}

// sink is a UDP socket on 127.0.0.1 that nobody reads (the kernel drops at
// its full buffer, after the whole send path), so that sends do not draw
// ICMP port unreachables.
func sink(b *testing.B) (int, func()) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	_ = c.(*net.UDPConn).SetReadBuffer(64 << 10)
	return c.LocalAddr().(*net.UDPAddr).Port, func() { c.Close() }
}

func reportPDUs(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "PDUs/s")
}

// BenchmarkGenerate: building and encoding one 146-byte message.
func BenchmarkGenerate(b *testing.B) {
	g, buf, now := esGenerator(b), make([]byte, MaxSize), time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := g.Next(buf, now); err != nil {
			b.Fatal(err)
		}
	}
	reportPDUs(b)
}

// BenchmarkProcess: checking, decoding and accounting one 146-byte message.
func BenchmarkProcess(b *testing.B) {
	g, buf, now := esGenerator(b), make([]byte, MaxSize), time.Now()
	n, _, _ := g.Next(buf, now)
	p := NewProcessor(plan(2048), 2048)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p.Process(buf[:n], now)
	}
	reportPDUs(b)
}

// BenchmarkSendLoopback: generate + sendmmsg batches of 64 to 127.0.0.1
// (a socket nobody reads: the kernel drops at its buffer, after the send
// path, loopback delivery included). The sending goroutine's thread is
// pinned to CPU 0: one core for everything.
func BenchmarkSendLoopback(b *testing.B) {
	g := esGenerator(b)
	port, closeSink := sink(b)
	defer closeSink()
	s := &Sender{Gen: g, Port: port, Dest: netip.MustParseAddr("127.0.0.1")}
	p, _ := measure.NewPacer(1e12, measure.Constant, time.Now(), 1) // never waits
	s.Pacer = p
	ctx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	go func() {
		for {
			if n, _, _ := s.Snapshot(); n >= uint64(b.N) {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	pinned := pin(b, 0)
	if err := s.Run(ctx); err != nil {
		b.Fatal(err)
	}
	reportPDUs(b)
	if !pinned {
		b.Log("not pinned: the figure may use more than one core")
	}
}

// BenchmarkReceiveLoopback: recvmmsg + process of 146-byte messages that a
// sender on CPU 1 keeps sending over 127.0.0.1; the receiving thread is
// pinned to CPU 0. Loopback delivers in the sender's softirq, so the
// kernel's IP/UDP input runs on CPU 1 (on a NIC it runs where the interrupt
// lands); CPU 0 does the socket reads, copies and decoding. Needs 2 CPUs
// and GOMAXPROCS >= 2 (-cpu 2).
func BenchmarkReceiveLoopback(b *testing.B) {
	if runtime.NumCPU() < 2 || runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs 2 CPUs and -cpu 2: the sender runs on the other core")
	}
	r := &Receiver{Plan: plan(2048), Joined: 2048, Port: freePort(b), Local: true}
	if _, err := r.Listen(); err != nil {
		b.Fatal(err)
	}
	pc := r.conns[0]
	proc := NewProcessor(plan(2048), 2048)
	g := esGenerator(b)
	s := &Sender{Gen: g, Port: r.Port, Dest: netip.MustParseAddr("127.0.0.1")}
	s.Pacer, _ = measure.NewPacer(1e12, measure.Constant, time.Now(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		pin(b, 1)
		_ = s.Run(ctx)
	}()
	if !pin(b, 0) {
		b.Skip("cannot pin the receiver to CPU 0")
	}
	msgs := make([]ipv4.Message, Batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, ReceiveBufferSize)}
	}
	b.ResetTimer()
	for got := 0; got < b.N; {
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for i := 0; i < n; i++ {
			proc.Process(msgs[i].Buffers[0][:msgs[i].N], now)
		}
		got += n
	}
	b.StopTimer()
	cancel()
	reportPDUs(b)
	_ = pc.Close()
}
