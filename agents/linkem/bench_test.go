package linkem

import (
	"testing"
	"time"
)

// BenchmarkDecide measures the per-packet decision alone.
func BenchmarkDecide(b *testing.B) {
	configs := []struct {
		name string
		c    Config
	}{
		{"none", Config{}},
		{"loss", Config{Loss: 1}},
		{"gemodel", Config{LossGE: GEModel{Enabled: true, P: 1, R: 30, OneMinusH: 100}}},
		{"delay_jitter_normal", Config{Delay: Duration(20 * time.Millisecond), Jitter: Duration(5 * time.Millisecond), Distribution: DistNormal}},
		{"delay_jitter_paretonormal", Config{Delay: Duration(20 * time.Millisecond), Jitter: Duration(5 * time.Millisecond), Distribution: DistParetoNormal}},
		{"everything", Config{Delay: Duration(20 * time.Millisecond), Jitter: Duration(5 * time.Millisecond), Distribution: DistPareto,
			Loss: 1, Reorder: 5, BER: 1e-6, Duplicate: 1}},
	}
	for _, tc := range configs {
		b.Run(tc.name, func(b *testing.B) {
			p := compile(tc.c.Normalize(), 0)
			d := NewDecider(1)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d.Decide(p, int64(i), 1500, 20, 0)
			}
		})
	}
}

// nopBackend discards everything.
type nopBackend struct{}

func (nopBackend) Verdicts([]Verdict) error  { return nil }
func (nopBackend) Inject([]byte) error       { return nil }
func (nopBackend) CanInject() error          { return nil }
func (nopBackend) SetCopyPayload(bool) error { return nil }

// BenchmarkArriveBatch measures linkem's userspace cost per packet with no
// impairment (decision, verdict batch, counters, histogram), in batches as
// the queue reader hands them over; the netlink system calls are not
// included.
func BenchmarkArriveBatch(b *testing.B) {
	for _, size := range []int{1, 16, 64} {
		b.Run("batch"+itoa(uint64(size)), func(b *testing.B) {
			e, err := NewEmulator(Config{}, Options{Backend: nopBackend{}})
			if err != nil {
				b.Fatal(err)
			}
			pkts := make([]Packet, size)
			for i := range pkts {
				pkts[i] = udpPacket(uint32(i), 36)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += size {
				e.ArriveBatch(pkts)
			}
		})
	}
}

// BenchmarkHoldRelease measures holding packets for a delay and releasing
// them through the heap.
func BenchmarkHoldRelease(b *testing.B) {
	clock := &fakeClock{}
	clock.ns.Store(1)
	e, err := NewEmulator(Config{Delay: Duration(time.Millisecond), Jitter: Duration(500 * time.Microsecond), Limit: MaxLimit},
		Options{Backend: nopBackend{}, Clock: clock, Timer: &fakeTimer{}})
	if err != nil {
		b.Fatal(err)
	}
	pkts := make([]Packet, 16)
	for i := range pkts {
		pkts[i] = udpPacket(uint32(i), 36)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i += len(pkts) {
		e.ArriveBatch(pkts)
		clock.advance(10 * time.Microsecond)
		e.ReleaseDue()
	}
}
