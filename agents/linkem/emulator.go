package linkem

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Packet is one packet handed to the emulator by the queue.
type Packet struct {
	ID uint32 // the queue's packet id, for the verdict
	// Len is the length of the whole IP packet in bytes; 0 means len(Data).
	Len int
	// Data is the start of the packet (the whole packet when the copy range
	// allows). It may be kept and modified by the emulator.
	Data []byte
}

// Verdict is the answer for one queued packet.
type Verdict struct {
	ID   uint32
	Drop bool
	// Data, when not nil, replaces the packet (same length) before it is
	// accepted: a corrupted packet.
	Data []byte
}

// Backend carries out what the emulator decides. Verdicts and Inject may
// be called from two goroutines at once (the one calling Arrive and the
// scheduler).
type Backend interface {
	// Verdicts sends a batch of verdicts, in order.
	Verdicts(vs []Verdict) error
	// Inject sends a packet that is not in the queue (a duplicate) on to
	// where the queued packets go.
	Inject(data []byte) error
	// CanInject tells whether Inject works; duplication is refused
	// otherwise, with this error.
	CanInject() error
	// SetCopyPayload asks the queue for whole packets (true) or only their
	// first bytes (false).
	SetCopyPayload(full bool) error
}

// BatchAccepter is implemented by a Backend that can accept, in one
// message, every packet still queued with an id up to and including id
// (NFQUEUE's batch verdict). The emulator uses it for a batch of plain
// accepts when nothing else it read is still waiting for a verdict: then
// exactly that batch's packets are accepted.
type BatchAccepter interface {
	AcceptUpTo(id uint32) error
}

// Clock returns monotonic nanoseconds.
type Clock interface{ Now() int64 }

// MonoClock is a Clock on Go's monotonic time, counting from its creation.
type MonoClock struct{ start time.Time }

// NewMonoClock starts a MonoClock.
func NewMonoClock() *MonoClock { return &MonoClock{start: time.Now()} }

// Now implements Clock.
func (c *MonoClock) Now() int64 { return int64(time.Since(c.start)) }

// Timer wakes the scheduler. Arm replaces any earlier arming and is called
// with the emulator's lock held, so it must not block.
type Timer interface {
	Arm(d time.Duration)
	// Wait blocks until the timer fires; it returns an error once the
	// timer is closed.
	Wait() error
	Close() error
}

// Options configure an Emulator.
type Options struct {
	Name    string // link label of the metrics
	Seed    uint64
	Backend Backend
	Clock   Clock // default NewMonoClock()
	Timer   Timer // required for Run
	Logger  *slog.Logger
}

// Applied is the answer to a configuration change.
type Applied struct {
	Name        string    `json:"name"`
	Seed        uint64    `json:"seed"`
	Generation  uint64    `json:"generation"`
	EffectiveAt time.Time `json:"effective_at"`
	// EffectiveAtUnixNano is EffectiveAt in nanoseconds since the epoch.
	EffectiveAtUnixNano int64  `json:"effective_at_unix_nano"`
	Config              Config `json:"config"`
}

// Emulator applies one direction's impairments to the packets of a queue.
//
// ArriveBatch is called by a single goroutine (the queue reader) and
// decides every packet as it comes: drops and immediate releases are
// answered on the spot, in one batch, everything else goes into a min-heap
// keyed by release time. Run is the one scheduler goroutine that issues
// the verdicts of held packets when their time comes, woken by a Timer
// armed for the earliest release (the reader also sends those that are due
// when it has a batch to send anyway).
type Emulator struct {
	name    string
	seed    uint64
	backend Backend
	clock   Clock
	timer   Timer
	logger  *slog.Logger

	params atomic.Pointer[params]
	cfgMu  sync.Mutex // serializes SetConfig
	since  atomic.Pointer[time.Time]

	mu         sync.Mutex // guards the fields below
	dec        *Decider
	heap       pktHeap
	armed      int64 // release time the timer is armed for; 0 = not armed
	armAt      int64 // when the timer is set to fire: armed - lead at the arming
	lead       int64 // how early the timer is armed: a running mean of how late it has fired
	seq        uint64
	draining   bool
	arrBatch   actionBatch // owned by the arrival goroutine
	releasing  int         // held packets taken from the heap whose verdicts the scheduler has not sent yet
	batchOK    atomic.Bool // the backend is a BatchAccepter and no verdict has failed
	schedBatch actionBatch // owned by the scheduler
	closing    atomic.Bool

	stats stats
	delay prometheus.Histogram
}

type stats struct {
	received, passed, dropped, corrupted, duplicated, reordered, overflow atomic.Uint64
	held                                                                  atomic.Int64
	configChanges, verdictErrors, injectErrors, skipped                   atomic.Uint64
	batchAccepted                                                         atomic.Uint64
}

// DelayBuckets are the bucket bounds of protolab_linkem_added_delay_seconds:
// 10us to 1s.
var DelayBuckets = []float64{
	10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1,
}

// NewEmulator validates cfg and returns an Emulator applying it.
func NewEmulator(cfg Config, o Options) (*Emulator, error) {
	cfg = cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Backend == nil {
		return nil, errors.New("linkem: no backend")
	}
	if cfg.Duplicate != 0 {
		if err := o.Backend.CanInject(); err != nil {
			return nil, fmt.Errorf("duplicate: %w", err)
		}
	}
	if o.Clock == nil {
		o.Clock = NewMonoClock()
	}
	if o.Logger == nil {
		o.Logger = discardLogger()
	}
	e := &Emulator{
		name: o.Name, seed: o.Seed, backend: o.Backend, clock: o.Clock, timer: o.Timer, logger: o.Logger,
		dec: NewDecider(o.Seed),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "protolab_linkem_added_delay_seconds",
			Help:        "Time from a packet's arrival in linkem to its verdict (or to the sending of a duplicate), in seconds, for forwarded packets.",
			Buckets:     DelayBuckets,
			ConstLabels: prometheus.Labels{"link": o.Name},
		}),
	}
	_, canBatch := o.Backend.(BatchAccepter)
	e.batchOK.Store(canBatch)
	e.params.Store(compile(cfg, 0))
	now := time.Now()
	e.since.Store(&now)
	return e, nil
}

// Config returns the configuration in force.
func (e *Emulator) Config() Applied {
	p := e.params.Load()
	at := *e.since.Load()
	return Applied{Name: e.name, Seed: e.seed, Generation: p.generation, EffectiveAt: at,
		EffectiveAtUnixNano: at.UnixNano(), Config: p.cfg}
}

// SetConfig validates c and makes it the configuration for every packet
// that arrives after it returns (packets already held keep their release
// times). It reports the time the change took effect.
func (e *Emulator) SetConfig(c Config) (Applied, error) {
	c = c.Normalize()
	if err := c.Validate(); err != nil {
		return Applied{}, err
	}
	if c.Duplicate != 0 {
		if err := e.backend.CanInject(); err != nil {
			return Applied{}, fmt.Errorf("duplicate: %w", err)
		}
	}
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	old := e.params.Load()
	p := compile(c, old.generation+1)
	// Widen the copy range before the switch, narrow it after, so that a
	// packet decided under a configuration that needs whole packets was
	// (all but always, see Packet) copied whole.
	if p.needPayload && !old.needPayload {
		if err := e.backend.SetCopyPayload(true); err != nil {
			return Applied{}, fmt.Errorf("asking the queue for whole packets: %w", err)
		}
	}
	e.params.Store(p)
	at := time.Now()
	e.since.Store(&at)
	e.stats.configChanges.Add(1)
	if !p.needPayload && old.needPayload {
		if err := e.backend.SetCopyPayload(false); err != nil {
			e.logger.Warn("could not narrow the queue copy range", "err", err)
		}
	}
	cfgJSON, _ := json.Marshal(p.cfg)
	e.logger.Info("config changed", "generation", p.generation, "config", string(cfgJSON))
	return Applied{Name: e.name, Seed: e.seed, Generation: p.generation, EffectiveAt: at,
		EffectiveAtUnixNano: at.UnixNano(), Config: p.cfg}, nil
}

// NeedsPayload tells whether the configuration in force needs whole
// packets.
func (e *Emulator) NeedsPayload() bool { return e.params.Load().needPayload }

// ipHeaderLen is the length of the fixed IP header at the start of b (IPv4
// with options, or the 40-byte IPv6 header), 0 if unknown.
func ipHeaderLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] >> 4 {
	case 4:
		return int(b[0]&0x0f) * 4
	case 6:
		return 40
	}
	return 0
}

// action is a verdict or injection to carry out once the lock is released.
type action struct {
	drop    bool
	inject  bool
	id      uint32
	data    []byte
	arrival int64
}

// actionBatch collects actions to carry out together: one Backend.Verdicts
// call for all the verdicts.
type actionBatch struct {
	acts []action
	vs   []Verdict
}

func (b *actionBatch) add(a action) { b.acts = append(b.acts, a) }

// Arrive decides one packet; see ArriveBatch.
func (e *Emulator) Arrive(pkt Packet) {
	one := [1]Packet{pkt}
	e.ArriveBatch(one[:])
}

// ArriveBatch decides packets that arrived together, in order, and sends
// the verdicts due at once in one batch, together with those of held
// packets whose release time has come. It must be called from one
// goroutine at a time. The packets' Data is only used during the call
// (what is held is copied).
func (e *Emulator) ArriveBatch(pkts []Packet) {
	now := e.clock.Now()
	e.stats.received.Add(uint64(len(pkts)))
	p := e.params.Load()
	b := &e.arrBatch

	e.mu.Lock()
	if e.draining {
		e.mu.Unlock()
		for _, pkt := range pkts {
			b.add(action{id: pkt.ID, arrival: now})
		}
		e.carryOut(b)
		return
	}
	// Held packets that are due go out with this batch: under sustained
	// load the reader may keep the only P busy for a while (GOMAXPROCS=1),
	// and the scheduler would only see its timer late. The timer stays
	// armed at or before the earliest release; the scheduler finds nothing
	// due and re-arms.
	for len(e.heap) > 0 && e.heap.min().release <= now {
		hp := e.heap.pop()
		b.add(hp.action())
	}
	for i := range pkts {
		e.decideOne(p, &pkts[i], now, b)
	}
	e.stats.held.Store(int64(len(e.heap)))
	upTo, batch := e.acceptsAll(b, pkts)
	e.mu.Unlock()
	e.carryOutBatch(b, upTo, batch)
}

// acceptsAll tells whether b's verdicts can go as one batch accept up to
// the last packet of pkts: b holds nothing but plain accepts (no drop, no
// rewritten payload, no duplicate) and every other packet read before is
// answered already (none held, none taken from the heap by the scheduler
// and not yet answered). The packets queued with ids up to the last one's
// are then exactly b's. Called with e.mu held.
func (e *Emulator) acceptsAll(b *actionBatch, pkts []Packet) (uint32, bool) {
	if len(pkts) == 0 || len(e.heap) != 0 || e.releasing != 0 || !e.batchOK.Load() {
		return 0, false
	}
	for i := range b.acts {
		if a := &b.acts[i]; a.drop || a.inject || a.data != nil {
			return 0, false
		}
	}
	return pkts[len(pkts)-1].ID, true
}

// decideOne decides a packet and holds it or adds its immediate actions
// to b. Called with e.mu held.
func (e *Emulator) decideOne(p *params, pkt *Packet, now int64, b *actionBatch) {
	if pkt.Len == 0 {
		pkt.Len = len(pkt.Data)
	}
	hdr := ipHeaderLen(pkt.Data)
	orig, dup, hasDup := e.dec.Decide(p, now, pkt.Len, hdr, len(e.heap))
	whole := len(pkt.Data) >= pkt.Len && hdr > 0

	// The duplicate's bytes are copied before the original is corrupted;
	// the original is queued or sent before its duplicate.
	var dupData []byte
	if hasDup {
		if !whole {
			e.stats.skipped.Add(1)
			hasDup = false
		} else {
			e.stats.duplicated.Add(1)
			if dup.Fate == FatePass {
				dupData = make([]byte, pkt.Len)
				copy(dupData, pkt.Data)
			}
		}
	}
	switch orig.Fate {
	case FateDrop:
		e.stats.dropped.Add(1)
		b.add(action{drop: true, id: pkt.ID})
	case FateOverflow:
		e.stats.overflow.Add(1)
		b.add(action{drop: true, id: pkt.ID})
	default:
		var data []byte
		if e.mark(&orig, pkt.Data, whole) {
			data = pkt.Data[:pkt.Len]
		}
		if orig.Release > now {
			kind := kindAccept
			if data != nil {
				kind = kindModified
				data = append([]byte(nil), data...)
			}
			e.hold(heldPkt{release: orig.Release, arrival: now, id: pkt.ID, kind: kind, data: data}, now)
		} else {
			b.add(action{id: pkt.ID, data: data, arrival: now})
		}
	}
	if hasDup {
		switch dup.Fate {
		case FateDrop:
			e.stats.dropped.Add(1)
		case FateOverflow:
			e.stats.overflow.Add(1)
		default:
			e.mark(&dup, dupData, true)
			if dup.Release > now {
				e.hold(heldPkt{release: dup.Release, arrival: now, kind: kindInject, data: dupData}, now)
			} else {
				b.add(action{inject: true, data: dupData, arrival: now})
			}
		}
	}
}

// mark counts a passing packet's corruption and reordering, and flips its
// bit in data when it is corrupted and data is whole. It reports whether
// data was modified.
func (e *Emulator) mark(d *Decision, data []byte, whole bool) bool {
	if d.Reordered {
		e.stats.reordered.Add(1)
	}
	if !d.Corrupt {
		return false
	}
	if !whole || d.FlipBit < 0 || d.FlipBit/8 >= len(data) {
		e.stats.skipped.Add(1)
		return false
	}
	data[d.FlipBit/8] ^= 1 << (7 - uint(d.FlipBit%8))
	e.stats.corrupted.Add(1)
	return true
}

// hold puts a packet in the heap and arms the timer if it is the new
// earliest. Called with e.mu held.
func (e *Emulator) hold(hp heldPkt, now int64) {
	e.seq++
	hp.seq = e.seq
	e.heap.push(hp)
	e.stats.held.Store(int64(len(e.heap)))
	if e.timer != nil && (e.armed == 0 || hp.release < e.armed) {
		e.arm(hp.release, now)
	}
}

// MaxLead bounds how early the scheduler's timer is armed, and so how early
// a packet can leave, to make up for the timer's wake-up latency.
const MaxLead = 250 * time.Microsecond

// arm sets the timer to fire lead before release. Called with e.mu held
// and e.timer set.
func (e *Emulator) arm(release, now int64) {
	e.armed = release
	e.armAt = release - e.lead
	e.timer.Arm(time.Duration(e.armAt - now))
}

// carryOut sends b's verdicts in one batch, then its injections, counts
// what passed and empties b.
func (e *Emulator) carryOut(b *actionBatch) { e.carryOutBatch(b, 0, false) }

// carryOutBatch is carryOut; with batch, b's verdicts (all plain accepts,
// see acceptsAll) go as one batch accept of every queued id up to upTo.
func (e *Emulator) carryOutBatch(b *actionBatch, upTo uint32, batch bool) {
	if len(b.acts) == 0 {
		return
	}
	vs := b.vs[:0]
	if batch {
		if err := e.backend.(BatchAccepter).AcceptUpTo(upTo); err != nil {
			e.verdictError(err, len(b.acts))
		} else {
			e.stats.batchAccepted.Add(uint64(len(b.acts)))
		}
	} else {
		for i := range b.acts {
			if a := &b.acts[i]; !a.inject {
				vs = append(vs, Verdict{ID: a.id, Drop: a.drop, Data: a.data})
			}
		}
	}
	if len(vs) > 0 {
		if err := e.backend.Verdicts(vs); err != nil {
			e.verdictError(err, len(vs))
		}
	}
	for i := range b.acts {
		if a := &b.acts[i]; a.inject {
			if err := e.backend.Inject(a.data); err != nil {
				e.stats.injectErrors.Add(1)
				e.logger.Debug("injecting duplicate failed", "err", err)
			}
		}
	}
	now := e.clock.Now()
	passed := 0
	for i := range b.acts {
		a := &b.acts[i]
		if !a.drop {
			passed++
			if d := now - a.arrival; d >= 0 {
				e.delay.Observe(float64(d) / 1e9)
			}
		}
		*a = action{}
	}
	e.stats.passed.Add(uint64(passed))
	for i := range vs {
		vs[i] = Verdict{}
	}
	b.acts, b.vs = b.acts[:0], vs[:0]
}

func (e *Emulator) verdictError(err error, n int) {
	// A packet whose verdict failed stays queued; a later batch accept
	// would let it through whatever its verdict was: no more batches.
	e.batchOK.Store(false)
	if e.stats.verdictErrors.Add(uint64(n)) <= 10 && !e.closing.Load() {
		e.logger.Warn("verdict failed", "err", err)
	}
}

func (hp *heldPkt) action() action {
	switch hp.kind {
	case kindInject:
		return action{inject: true, data: hp.data, arrival: hp.arrival}
	case kindModified:
		return action{id: hp.id, data: hp.data, arrival: hp.arrival}
	default:
		return action{id: hp.id, arrival: hp.arrival}
	}
}

// ReleaseDue issues the verdicts of every held packet whose release time
// has come (in one batch), re-arms the timer for the next one, and returns
// how many were released. Tests call it directly; Run uses releaseOnTimer.
// It must not be called concurrently with itself.
func (e *Emulator) ReleaseDue() int { return e.release(false) }

// release is ReleaseDue; onTimer says the timer has just fired. A timer
// wakes its waiter some tens of microseconds late (an idle vCPU, the
// poller, the scheduler), and every delayed packet would carry that on top
// of its delay. So the wake-up's lateness is learnt as a running mean
// (lead, at most MaxLead), the timer is armed that much before the earliest
// release, and a wake-up that comes before the release waits out the rest
// busily (yielding, without the lock) instead of sleeping again: releases
// are on time unless the wake-up was later than lead, and never early.
func (e *Emulator) release(onTimer bool) int {
	now := e.clock.Now()
	e.mu.Lock()
	if onTimer && e.armed != 0 {
		if late := now - e.armAt; late >= 0 && late <= 4*int64(MaxLead) {
			e.lead += (late - e.lead) / 8
			e.lead = min(max(e.lead, 0), int64(MaxLead))
		}
		if len(e.heap) > 0 {
			if next := e.heap.min().release; next > now && next-now <= int64(MaxLead) {
				e.mu.Unlock()
				for now < next {
					runtime.Gosched()
					now = e.clock.Now()
				}
				e.mu.Lock()
			}
		}
	}
	b := &e.schedBatch
	for len(e.heap) > 0 && e.heap.min().release <= now {
		hp := e.heap.pop()
		b.add(hp.action())
	}
	e.rearm(now)
	e.stats.held.Store(int64(len(e.heap)))
	n := len(b.acts)
	e.releasing += n
	e.mu.Unlock()
	e.carryOut(b)
	if n > 0 {
		e.mu.Lock()
		e.releasing -= n
		e.mu.Unlock()
	}
	return n
}

// Lead is how early the timer is currently armed before a release (see
// release).
func (e *Emulator) Lead() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Duration(e.lead)
}

// rearm arms the timer for the earliest held packet. Called with e.mu held.
func (e *Emulator) rearm(now int64) {
	if len(e.heap) == 0 {
		e.armed = 0
		return
	}
	if e.timer != nil {
		e.arm(e.heap.min().release, now)
	} else {
		e.armed = e.heap.min().release
	}
}

// NextRelease returns the earliest held release time and whether there is
// one.
func (e *Emulator) NextRelease() (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.heap) == 0 {
		return 0, false
	}
	return e.heap.min().release, true
}

// Held returns the number of held packet instances.
func (e *Emulator) Held() int { return int(e.stats.held.Load()) }

// Run is the scheduler: it issues held packets' verdicts as their times
// come, until the timer is closed.
func (e *Emulator) Run() error {
	if e.timer == nil {
		return errors.New("linkem: no timer")
	}
	for {
		if err := e.timer.Wait(); err != nil {
			return nil
		}
		e.release(true)
	}
}

// Drain switches the emulator to pass-through (every later arrival is
// accepted at once, unimpaired) and releases every held packet now:
// queued ones are accepted (with their corruption, if any) and held
// duplicates are sent. It returns how many were released.
func (e *Emulator) Drain() int {
	var b actionBatch
	e.mu.Lock()
	e.draining = true
	for len(e.heap) > 0 {
		hp := e.heap.pop()
		b.add(hp.action())
	}
	e.armed = 0
	e.stats.held.Store(0)
	e.mu.Unlock()
	n := len(b.acts)
	e.carryOut(&b)
	return n
}

// SetClosing silences verdict errors expected while the queue shuts down.
func (e *Emulator) SetClosing() { e.closing.Store(true) }

// Counts is a snapshot of the packet counters.
type Counts struct {
	Received, Passed, Dropped, Corrupted, Duplicated, Reordered, Overflow uint64
	Held                                                                  int64
	ConfigChanges, VerdictErrors, InjectErrors, Skipped                   uint64
	BatchAccepted                                                         uint64 // passed by batch accepts
}

// Counts returns the counters.
func (e *Emulator) Counts() Counts {
	s := &e.stats
	return Counts{
		Received: s.received.Load(), Passed: s.passed.Load(), Dropped: s.dropped.Load(),
		Corrupted: s.corrupted.Load(), Duplicated: s.duplicated.Load(), Reordered: s.reordered.Load(),
		Overflow: s.overflow.Load(), Held: s.held.Load(), ConfigChanges: s.configChanges.Load(),
		VerdictErrors: s.verdictErrors.Load(), InjectErrors: s.injectErrors.Load(), Skipped: s.skipped.Load(),
		BatchAccepted: s.batchAccepted.Load(),
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
