package linkem

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) Now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

type fakeTimer struct {
	mu    sync.Mutex
	armed []time.Duration
}

func (t *fakeTimer) Arm(d time.Duration) {
	t.mu.Lock()
	t.armed = append(t.armed, d)
	t.mu.Unlock()
}
func (t *fakeTimer) Wait() error  { return errors.New("fake timer") }
func (t *fakeTimer) Close() error { return nil }
func (t *fakeTimer) last() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.armed) == 0 {
		return -1
	}
	return t.armed[len(t.armed)-1]
}

type sent struct {
	v      Verdict
	inject bool
	at     int64
}

type fakeBackend struct {
	clock     Clock
	mu        sync.Mutex
	out       []sent
	batches   []int
	copyCalls []bool
	injectErr error
}

func (b *fakeBackend) Verdicts(vs []Verdict) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range vs {
		if v.Data != nil {
			v.Data = append([]byte(nil), v.Data...)
		}
		b.out = append(b.out, sent{v: v, at: b.clock.Now()})
	}
	b.batches = append(b.batches, len(vs))
	return nil
}

func (b *fakeBackend) Inject(data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out = append(b.out, sent{v: Verdict{Data: append([]byte(nil), data...)}, inject: true, at: b.clock.Now()})
	return nil
}

func (b *fakeBackend) CanInject() error { return b.injectErr }

func (b *fakeBackend) SetCopyPayload(full bool) error {
	b.mu.Lock()
	b.copyCalls = append(b.copyCalls, full)
	b.mu.Unlock()
	return nil
}

func (b *fakeBackend) sent() []sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sent(nil), b.out...)
}

func newTestEmulator(t testing.TB, c Config) (*Emulator, *fakeBackend, *fakeClock, *fakeTimer) {
	t.Helper()
	clock := &fakeClock{}
	clock.ns.Store(int64(time.Hour)) // not 0: 0 means "not armed"
	be := &fakeBackend{clock: clock}
	timer := &fakeTimer{}
	e, err := NewEmulator(c, Options{Name: "test", Seed: 1, Backend: be, Clock: clock, Timer: timer})
	if err != nil {
		t.Fatal(err)
	}
	return e, be, clock, timer
}

// udpPacket is an IPv4/UDP packet with a payload of n bytes of i.
func udpPacket(id uint32, n int) Packet {
	b := make([]byte, 28+n)
	b[0] = 0x45
	for i := 28; i < len(b); i++ {
		b[i] = byte(id)
	}
	return Packet{ID: id, Data: b}
}

func checkInvariant(t *testing.T, e *Emulator) {
	t.Helper()
	n := e.Counts()
	if n.Received+n.Duplicated != n.Passed+n.Dropped+n.Overflow+uint64(n.Held) {
		t.Errorf("counts do not add up: received %d + duplicated %d != passed %d + dropped %d + overflow %d + held %d",
			n.Received, n.Duplicated, n.Passed, n.Dropped, n.Overflow, n.Held)
	}
}

func TestZeroDelayIsImmediate(t *testing.T) {
	e, be, _, timer := newTestEmulator(t, Config{})
	pkts := []Packet{udpPacket(1, 10), udpPacket(2, 10), udpPacket(3, 10)}
	e.ArriveBatch(pkts)
	out := be.sent()
	if len(out) != 3 || len(be.batches) != 1 {
		t.Fatalf("sent %d verdicts in %d batches, want 3 in 1", len(out), len(be.batches))
	}
	for i, s := range out {
		if s.v.ID != uint32(i+1) || s.v.Drop || s.v.Data != nil {
			t.Errorf("verdict %d = %+v, want plain accept of %d", i, s.v, i+1)
		}
	}
	if len(timer.armed) != 0 || e.Held() != 0 {
		t.Errorf("zero delay armed the timer (%v) or held packets (%d)", timer.armed, e.Held())
	}
	checkInvariant(t, e)
}

func TestDelayedRelease(t *testing.T) {
	e, be, clock, timer := newTestEmulator(t, Config{Delay: Duration(20 * time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	clock.advance(5 * time.Millisecond)
	e.Arrive(udpPacket(2, 10))
	if got := timer.last(); got != 20*time.Millisecond {
		t.Errorf("timer armed for %v, want 20ms", got)
	}
	if e.Held() != 2 || len(be.sent()) != 0 {
		t.Fatalf("held %d, sent %d; want 2 held, none sent", e.Held(), len(be.sent()))
	}
	clock.advance(15*time.Millisecond - 1)
	if n := e.ReleaseDue(); n != 0 {
		t.Fatalf("released %d before their time", n)
	}
	clock.advance(1)
	if n := e.ReleaseDue(); n != 1 {
		t.Fatalf("released %d at 20ms, want 1", n)
	}
	if got := timer.last(); got != 5*time.Millisecond {
		t.Errorf("timer re-armed for %v, want 5ms (the second packet)", got)
	}
	clock.advance(5 * time.Millisecond)
	e.ReleaseDue()
	out := be.sent()
	if len(out) != 2 || out[0].v.ID != 1 || out[1].v.ID != 2 {
		t.Fatalf("sent %+v", out)
	}
	if d := time.Duration(out[1].at - out[0].at); d != 5*time.Millisecond {
		t.Errorf("releases %v apart, want 5ms", d)
	}
	if e.Held() != 0 {
		t.Errorf("still held: %d", e.Held())
	}
	checkInvariant(t, e)
}

// An earlier release time than the armed one re-arms the timer (jitter).
func TestEarlierPacketRearms(t *testing.T) {
	e, _, clock, timer := newTestEmulator(t, Config{Delay: Duration(50 * time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	if _, err := e.SetConfig(Config{Delay: Duration(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Millisecond)
	e.Arrive(udpPacket(2, 10))
	if got := timer.last(); got != 10*time.Millisecond {
		t.Errorf("timer armed for %v, want 10ms for the earlier packet", got)
	}
	if next, _ := e.NextRelease(); next != clock.Now()+int64(10*time.Millisecond) {
		t.Errorf("next release %d", next)
	}
}

func TestOverflowAccounting(t *testing.T) {
	e, be, clock, _ := newTestEmulator(t, Config{Delay: Duration(time.Second), Limit: 100})
	for i := 0; i < 250; i++ {
		e.Arrive(udpPacket(uint32(i), 10))
	}
	n := e.Counts()
	if n.Held != 100 || n.Overflow != 150 || n.Passed != 0 {
		t.Errorf("held %d overflow %d passed %d; want 100, 150, 0", n.Held, n.Overflow, n.Passed)
	}
	drops := 0
	for _, s := range be.sent() {
		if !s.v.Drop || s.v.ID < 100 {
			t.Fatalf("unexpected verdict %+v", s.v)
		}
		drops++
	}
	if drops != 150 {
		t.Errorf("%d drop verdicts, want 150", drops)
	}
	checkInvariant(t, e)
	clock.advance(time.Second)
	if got := e.ReleaseDue(); got != 100 {
		t.Errorf("released %d, want 100", got)
	}
	checkInvariant(t, e)
	if n := e.Counts(); n.Passed != 100 || n.Held != 0 {
		t.Errorf("after release: %+v", n)
	}
}

func TestCorruptionFlipsOneBitAfterHeader(t *testing.T) {
	e, be, _, _ := newTestEmulator(t, Config{Corrupt: 100})
	for i := 0; i < 200; i++ {
		p := udpPacket(uint32(i), 100)
		orig := append([]byte(nil), p.Data...)
		e.Arrive(p)
		out := be.sent()
		got := out[len(out)-1].v
		if got.Data == nil || len(got.Data) != len(orig) {
			t.Fatalf("packet %d: no modified payload in the verdict", i)
		}
		diff := 0
		for j := range orig {
			x := orig[j] ^ got.Data[j]
			for ; x != 0; x &= x - 1 {
				diff++
				if j < 20 {
					t.Fatalf("packet %d: bit flipped in the IP header (byte %d)", i, j)
				}
			}
		}
		if diff != 1 {
			t.Fatalf("packet %d: %d bits differ, want 1", i, diff)
		}
	}
	if n := e.Counts(); n.Corrupted != 200 {
		t.Errorf("corrupted %d, want 200", n.Corrupted)
	}
}

// A truncated copy (the copy range was still small) cannot be corrupted
// or duplicated: the packet passes as it is and the skip is counted.
func TestTruncatedCopySkipsImpairments(t *testing.T) {
	e, be, _, _ := newTestEmulator(t, Config{Corrupt: 100, Duplicate: 100})
	p := udpPacket(1, 1000)
	p.Len = len(p.Data)
	p.Data = p.Data[:64]
	e.Arrive(p)
	out := be.sent()
	if len(out) != 1 || out[0].v.Data != nil || out[0].inject {
		t.Fatalf("sent %+v, want one plain accept", out)
	}
	if n := e.Counts(); n.Skipped != 2 || n.Corrupted != 0 || n.Duplicated != 0 || n.Passed != 1 {
		t.Errorf("counts %+v", n)
	}
	checkInvariant(t, e)
}

func TestDuplicateInjected(t *testing.T) {
	e, be, clock, _ := newTestEmulator(t, Config{Delay: Duration(time.Millisecond), Duplicate: 100})
	p := udpPacket(7, 30)
	want := append([]byte(nil), p.Data...)
	e.Arrive(p)
	if e.Held() != 2 {
		t.Fatalf("held %d, want original and copy", e.Held())
	}
	clock.advance(time.Millisecond)
	e.ReleaseDue()
	out := be.sent()
	if len(out) != 2 || out[0].inject || out[0].v.ID != 7 || !out[1].inject || !bytes.Equal(out[1].v.Data, want) {
		t.Fatalf("sent %+v; want the original's verdict, then the copy injected", out)
	}
	if n := e.Counts(); n.Duplicated != 1 || n.Passed != 2 {
		t.Errorf("counts %+v", n)
	}
	checkInvariant(t, e)

	be.injectErr = errors.New("no raw socket")
	if _, err := e.SetConfig(Config{Duplicate: 1}); err == nil {
		t.Error("duplicate accepted without a way to inject")
	}
	if _, err := NewEmulator(Config{Duplicate: 1}, Options{Backend: be}); err == nil {
		t.Error("NewEmulator accepted duplicate without a way to inject")
	}
}

// Releases come out in release-time order, FIFO among equal times, for
// any mix of delays.
func TestReleaseOrderRandomized(t *testing.T) {
	e, be, clock, _ := newTestEmulator(t, Config{Delay: Duration(10 * time.Millisecond), Jitter: Duration(9 * time.Millisecond), Limit: MaxLimit})
	type exp struct {
		id  uint32
		rel int64
	}
	r := rand.New(rand.NewPCG(1, 2))
	var want []exp
	for i := 0; i < 3000; i++ {
		clock.advance(time.Duration(r.IntN(20000)))
		e.Arrive(udpPacket(uint32(i), 1))
		if i%100 == 0 {
			e.ReleaseDue()
		}
	}
	clock.advance(time.Second)
	e.ReleaseDue()
	out := be.sent()
	if len(out) != 3000 {
		t.Fatalf("sent %d", len(out))
	}
	for _, s := range out {
		want = append(want, exp{s.v.ID, s.at})
	}
	if !sort.SliceIsSorted(want, func(i, j int) bool { return want[i].rel < want[j].rel }) {
		t.Error("verdict times not monotonic")
	}
	checkInvariant(t, e)
}

func TestDrainReleasesEverything(t *testing.T) {
	e, be, _, _ := newTestEmulator(t, Config{Delay: Duration(time.Minute), Duplicate: 50, Limit: 1000})
	for i := 0; i < 100; i++ {
		e.Arrive(udpPacket(uint32(i), 10))
	}
	held := e.Held()
	if held < 100 {
		t.Fatalf("held %d", held)
	}
	if n := e.Drain(); n != held {
		t.Errorf("drained %d, want %d", n, held)
	}
	if e.Held() != 0 {
		t.Errorf("still held %d", e.Held())
	}
	if got := len(be.sent()); got != held {
		t.Errorf("sent %d after drain, want %d", got, held)
	}
	// Later arrivals pass at once, unimpaired.
	e.Arrive(udpPacket(1000, 10))
	if out := be.sent(); out[len(out)-1].v.ID != 1000 || e.Held() != 0 {
		t.Error("arrival after drain was not passed at once")
	}
	checkInvariant(t, e)
}

func TestSetConfigCopyRangeOrder(t *testing.T) {
	e, be, _, _ := newTestEmulator(t, Config{})
	steps := []struct {
		c    Config
		want []bool
	}{
		{Config{Loss: 1}, nil},
		{Config{Corrupt: 1}, []bool{true}},
		{Config{BER: 1e-6}, []bool{true}},
		{Config{Delay: Duration(time.Millisecond)}, []bool{true, false}},
	}
	for i, s := range steps {
		a, err := e.SetConfig(s.c)
		if err != nil {
			t.Fatal(err)
		}
		if a.Generation != uint64(i+1) {
			t.Errorf("generation %d, want %d", a.Generation, i+1)
		}
		if !equalBools(be.copyCalls, s.want) {
			t.Errorf("after step %d copy range calls %v, want %v", i, be.copyCalls, s.want)
		}
	}
	if n := e.Counts(); n.ConfigChanges != 4 {
		t.Errorf("config changes %d", n.ConfigChanges)
	}
	if _, err := e.SetConfig(Config{Loss: 200}); err == nil {
		t.Error("invalid config accepted")
	}
	if got := e.Config().Generation; got != 4 {
		t.Errorf("generation %d after a rejected change", got)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// PUT /config is atomic: every packet is decided entirely under the old
// or the new configuration, never a mix, and every packet arriving after
// SetConfig returns uses the new one.
func TestSetConfigAtomic(t *testing.T) {
	// A: delay 1ms, never corrupt. B: delay 2ms, always corrupt.
	// Limits above the arrival count: every packet is held, so the heap shows every decision.
	A := Config{Delay: Duration(time.Millisecond), Limit: 30000}
	B := Config{Delay: Duration(2 * time.Millisecond), Corrupt: 100, Limit: 30000}
	e, _, _, _ := newTestEmulator(t, A)
	var stop atomic.Bool
	var changes atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			c := A
			if i%2 == 0 {
				c = B
			}
			if _, err := e.SetConfig(c); err != nil {
				t.Error(err)
				return
			}
			changes.Add(1)
			if i == 0 {
				close(started)
			}
		}
	}()
	<-started
	// Every 50 arrivals, wait for the changer to have made a change since the last wait: the interleaving is
	// made sure of, not left to the scheduler (on a busy machine the changer's thread can miss a whole loop).
	deadline := time.Now().Add(10 * time.Second)
	seenChanges := changes.Load()
	for i := 0; i < 20000; i++ {
		e.Arrive(udpPacket(uint32(i), 10))
		if i%50 == 0 {
			for changes.Load() == seenChanges {
				if time.Now().After(deadline) {
					stop.Store(true)
					wg.Wait()
					t.Fatal("the changer made no change in 10 s")
				}
				runtime.Gosched()
			}
			seenChanges = changes.Load()
		}
	}
	stop.Store(true)
	wg.Wait()
	// After the last change returned, the next packet uses it.
	last := e.Config().Config
	e.Arrive(udpPacket(99999, 10))

	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[time.Duration]int{}
	for _, hp := range e.heap {
		d := time.Duration(hp.release - hp.arrival)
		corrupt := hp.kind == kindModified
		if (d == time.Millisecond && corrupt) || (d == 2*time.Millisecond && !corrupt) || (d != time.Millisecond && d != 2*time.Millisecond) {
			t.Fatalf("packet %d decided under a mix of configurations: delay %v, corrupted %v", hp.id, d, corrupt)
		}
		seen[d]++
		if hp.id == 99999 && d != time.Duration(last.Delay) {
			t.Errorf("packet after the last SetConfig got delay %v, want %v", d, time.Duration(last.Delay))
		}
	}
	if seen[time.Millisecond] == 0 || seen[2*time.Millisecond] == 0 {
		t.Errorf("the changes did not interleave with the arrivals: %v", seen)
	}
}

// Held packets whose time has come go out with the next arrivals' batch,
// even if the scheduler has not run (the reader may hold the only P).
func TestArrivalReleasesDue(t *testing.T) {
	e, be, clock, _ := newTestEmulator(t, Config{Delay: Duration(time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	e.Arrive(udpPacket(2, 10))
	clock.advance(time.Millisecond)
	e.Arrive(udpPacket(3, 10))
	out := be.sent()
	if len(out) != 2 || out[0].v.ID != 1 || out[1].v.ID != 2 || len(be.batches) != 1 {
		t.Fatalf("sent %+v in batches %v; want 1 and 2 together", out, be.batches)
	}
	if e.Held() != 1 {
		t.Errorf("held %d, want 1", e.Held())
	}
	if n := e.ReleaseDue(); n != 0 {
		t.Errorf("scheduler released %d already released packets", n)
	}
	checkInvariant(t, e)
}

// An empty batch (the busy-polling receiver's call between reads that
// found nothing) releases what has fallen due and nothing else, and counts
// no arrival.
func TestEmptyBatchReleasesDue(t *testing.T) {
	e, be, clock, _ := newTestEmulator(t, Config{Delay: Duration(time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	clock.advance(500 * time.Microsecond)
	e.Arrive(udpPacket(2, 10))
	e.ArriveBatch(nil)
	if out := be.sent(); len(out) != 0 {
		t.Fatalf("sent %+v before anything was due", out)
	}
	clock.advance(500 * time.Microsecond)
	e.ArriveBatch(nil)
	out := be.sent()
	if len(out) != 1 || out[0].v.ID != 1 {
		t.Fatalf("sent %+v; want packet 1 alone", out)
	}
	if c := e.Counts(); c.Received != 2 || e.Held() != 1 {
		t.Errorf("received %d held %d; want 2 and 1", c.Received, e.Held())
	}
	checkInvariant(t, e)
}
