package linkem

import (
	"errors"
	"testing"
	"time"
)

// batchBackend is a fakeBackend that also accepts in batches, recording
// the ids up to which it accepted; hook, when set, runs inside Verdicts.
type batchBackend struct {
	*fakeBackend
	upTo   []uint32
	hook   func()
	failUp error
}

func (b *batchBackend) AcceptUpTo(id uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failUp != nil {
		return b.failUp
	}
	b.upTo = append(b.upTo, id)
	return nil
}

func (b *batchBackend) Verdicts(vs []Verdict) error {
	if h := b.hook; h != nil {
		b.hook = nil
		h()
	}
	return b.fakeBackend.Verdicts(vs)
}

func newBatchEmulator(t *testing.T, c Config) (*Emulator, *batchBackend, *fakeClock) {
	t.Helper()
	clock := &fakeClock{}
	clock.ns.Store(int64(time.Hour))
	be := &batchBackend{fakeBackend: &fakeBackend{clock: clock}}
	e, err := NewEmulator(c, Options{Name: "test", Seed: 1, Backend: be, Clock: clock, Timer: &fakeTimer{}})
	if err != nil {
		t.Fatal(err)
	}
	return e, be, clock
}

func TestPlainAcceptsGoAsOneBatch(t *testing.T) {
	e, be, _ := newBatchEmulator(t, Config{})
	e.ArriveBatch([]Packet{udpPacket(7, 10), udpPacket(8, 10), udpPacket(9, 10)})
	if len(be.upTo) != 1 || be.upTo[0] != 9 || len(be.sent()) != 0 {
		t.Fatalf("batch accepts %v and verdicts %+v; want one batch up to 9 and no single verdict", be.upTo, be.sent())
	}
	if n := e.Counts(); n.Passed != 3 {
		t.Errorf("passed %d, want 3", n.Passed)
	}
	checkInvariant(t, e)
}

// A batch accept covers every queued id up to its own: with a packet still
// held (its id is lower), it would let that packet out early.
func TestNoBatchWhileAPacketIsHeld(t *testing.T) {
	e, be, _ := newBatchEmulator(t, Config{Delay: Duration(10 * time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	if _, err := e.SetConfig(Config{}); err != nil {
		t.Fatal(err)
	}
	e.ArriveBatch([]Packet{udpPacket(2, 10), udpPacket(3, 10)})
	if len(be.upTo) != 0 {
		t.Fatalf("batch accepted up to %v with packet 1 held", be.upTo)
	}
	if out := be.sent(); len(out) != 2 || out[0].v.ID != 2 || out[1].v.ID != 3 {
		t.Fatalf("single verdicts %+v, want 2 and 3", out)
	}
}

func TestNoBatchWithADropInIt(t *testing.T) {
	e, be, _ := newBatchEmulator(t, Config{Loss: 100})
	e.ArriveBatch([]Packet{udpPacket(1, 10), udpPacket(2, 10)})
	if len(be.upTo) != 0 {
		t.Fatalf("batch accepted up to %v although the packets are dropped", be.upTo)
	}
	for _, s := range be.sent() {
		if !s.v.Drop {
			t.Errorf("verdict %+v, want a drop", s.v)
		}
	}
}

// The scheduler takes due packets from the heap under the lock and sends
// their verdicts after it: a batch decided in between would accept them
// first (with whatever payload they were to get).
func TestNoBatchWhileTheSchedulerIsSendingHeldOnes(t *testing.T) {
	e, be, clock := newBatchEmulator(t, Config{Delay: Duration(5 * time.Millisecond)})
	e.Arrive(udpPacket(1, 10))
	if _, err := e.SetConfig(Config{}); err != nil {
		t.Fatal(err)
	}
	clock.advance(5 * time.Millisecond)
	be.hook = func() { e.ArriveBatch([]Packet{udpPacket(2, 10)}) } // arrives while 1's verdict is on its way
	if n := e.ReleaseDue(); n != 1 {
		t.Fatalf("released %d, want 1", n)
	}
	if len(be.upTo) != 0 {
		t.Fatalf("batch accepted up to %v while packet 1's verdict was being sent", be.upTo)
	}
	e.ArriveBatch([]Packet{udpPacket(3, 10)}) // everything answered: batches again
	if len(be.upTo) != 1 || be.upTo[0] != 3 {
		t.Fatalf("batch accepts %v, want one up to 3", be.upTo)
	}
	checkInvariant(t, e)
}

func TestAFailedVerdictEndsBatching(t *testing.T) {
	e, be, _ := newBatchEmulator(t, Config{})
	be.failUp = errors.New("ENOBUFS")
	e.ArriveBatch([]Packet{udpPacket(1, 10)})
	be.failUp = nil
	e.ArriveBatch([]Packet{udpPacket(2, 10)})
	if len(be.upTo) != 0 || len(be.sent()) != 1 || be.sent()[0].v.ID != 2 {
		t.Fatalf("after a failed verdict: batches %v, single verdicts %+v; want none and a single one for 2", be.upTo, be.sent())
	}
	if n := e.Counts(); n.VerdictErrors != 1 {
		t.Errorf("verdict errors %d, want 1", n.VerdictErrors)
	}
}
