package spims

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"protolab/agents/tp4"
	"protolab/agents/transport"
)

// Expedited data amid a bulk_get (seed 002's experiment 1 on today's
// stacks): the responder sends a small expedited message after every
// Every-th unit, over one of three channels:
//
//   - urgent: in the bulk's own stream, its last byte as TCP urgent data
//     (MSG_OOB). TCP's urgent data is one out-of-band byte and a pointer:
//     the rest of the message rides in-band and all of it waits behind the
//     units queued before it in the sender's socket buffer; only the
//     urgent pointer goes ahead, in the headers of the segments already
//     queued, and a Go receiver cannot see that (it would come as SIGURG,
//     which Go's runtime uses for preemption). The initiator keeps urgent
//     bytes inline (SO_OOBINLINE) and reads the message where it stands in
//     the stream: its delay is that of in-band data.
//   - connection: a second connection of the same transport to the same
//     responder, carrying only expedited messages; it shares the path but
//     not the bulk's send buffer or congestion window.
//   - stream: a second stream of the same connection (QUIC): its own
//     flow control and order, the connection's congestion control.
//
// Delays are measured on one clock, CLOCK_MONOTONIC: the responder notes
// when each unit's write returned (the whole unit in the transport's
// hands, as protolab-tp4's sender stamps a TSDU when its send buffer takes
// it whole) and sends the times in the stop answer, and stamps each
// expedited message when it asks to send it (a write that then waits for
// room in the socket buffer counts: that is the user's wait); the
// initiator reads the clock when a unit or message is read. That is one clock only when both run on one kernel (containers on
// one host do): the initiator sends its kernel's boot_id with the
// settings and the responder refuses delays when its own differs.
//
// The rate is the paper's, expedited messages per unit (.33, .14, .08,
// .0588, .0455, .037, .03), as one after every N units ([tp4.ExpeditedEvery]
// rounds it), so a transfer of Count units carries Count/N of them.

// Expedited channels.
const (
	ViaUrgent     = "urgent"
	ViaConnection = "connection"
	ViaStream     = "stream"
)

// DefaultExpeditedSize is an expedited message's payload (the paper's
// expedited TSDU is at most 16 octets).
const DefaultExpeditedSize = 16

// MaxExpeditedSize bounds an expedited message's payload.
const MaxExpeditedSize = 1024

// ExpeditedSpec is a job's "expedited": {"via": "urgent", "rate": 0.33,
// "size": 16}.
type ExpeditedSpec struct {
	Via  string  `json:"via"`
	Rate float64 `json:"rate"`
	Size int     `json:"size,omitempty"`
}

// resolve checks e for transport t and returns the expedited config
// (Dial left for Run).
func (e ExpeditedSpec) resolve(t transport.Transport) (*ExpeditedConfig, error) {
	props := t.Properties()
	switch e.Via {
	case ViaUrgent:
		if !props.Urgent {
			return nil, bad("expedited via urgent over %s: TCP urgent data (MSG_OOB) is plain TCP's (transports with it: %s)", t.Name(), namesWith(func(p transport.Properties) bool { return p.Urgent }))
		}
	case ViaStream:
		if !props.Multistream {
			return nil, bad("expedited via stream over %s: a second stream on one connection needs a multistream transport (%s)", t.Name(), namesWith(func(p transport.Properties) bool { return p.Multistream }))
		}
	case ViaConnection:
	case "":
		return nil, bad("expedited: via missing (urgent, connection or stream)")
	default:
		return nil, bad("expedited via %q: urgent, connection or stream", e.Via)
	}
	if !(e.Rate > 0 && e.Rate <= 1) {
		return nil, bad("expedited rate %g: expedited messages per unit, more than 0 and at most 1 (0.33: one after every 3rd unit)", e.Rate)
	}
	size := e.Size
	if size == 0 {
		size = DefaultExpeditedSize
	}
	if size < 1 || size > MaxExpeditedSize {
		return nil, bad("expedited size %d: payload bytes, 1..%d", e.Size, MaxExpeditedSize)
	}
	return &ExpeditedConfig{Via: e.Via, Every: tp4.ExpeditedEvery(e.Rate), Size: size}, nil
}

func namesWith(has func(transport.Properties) bool) string {
	var out []string
	for _, n := range transport.Names() {
		if t, _ := transport.Get(n); has(t.Properties()) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// ExpeditedConfig is a bulk_get's expedited data: a message of Size
// payload bytes after every Every-th unit, over Via; Dial makes the second
// connection of via connection.
type ExpeditedConfig struct {
	Via   string
	Every int
	Size  int
	Dial  func(ctx context.Context) (transport.Conn, error)
}

// expSettings travel in bulkSettings.
type expSettings struct {
	Via   string `json:"via"`
	Every int    `json:"every"`
	Size  int    `json:"size"`
	Token string `json:"token,omitempty"` // connection, stream: the hello's
}

// monoNow is CLOCK_MONOTONIC in nanoseconds (one clock for every process
// of a kernel, network namespaces included).
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime(CLOCK_MONOTONIC): %v", err)) // cannot fail on Linux
	}
	return ts.Nano()
}

// stampWords splits a stamp into a header's a and b.
func stampWords(ns int64) (uint32, uint32) { return uint32(uint64(ns) >> 32), uint32(ns) }

func stampOf(h header) int64 { return int64(uint64(h.a)<<32 | uint64(h.b)) }

// bootIDFile names this kernel's boot (not namespaced: the same in every
// container of a host).
var bootIDFile = "/proc/sys/kernel/random/boot_id"

func bootID() (string, error) {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "", fmt.Errorf("delays need the kernel's boot_id to check the clock is shared: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
}

func newToken() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// expeditedMsg is expedited message idx: the header with the stamp, a
// payload of n bytes whose pattern depends on idx.
func expeditedMsg(dst []byte, idx uint32, n int, stamp int64) []byte {
	a, b := stampWords(stamp)
	dst = appendMsg(dst[:0], header{op: opExpedited, seq: idx, a: a, b: b}, n)
	for k := range n {
		dst[Header+k] = byte(int(idx)*31 + k)
	}
	return dst
}

// --- the responder's side ------------------------------------------------

// expRegistry holds the responder's expedited connections by token until
// the bulk connection that names them takes them.
type expRegistry struct {
	mu sync.Mutex
	m  map[string]transport.Conn
}

func (r *expRegistry) put(token string, c transport.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]transport.Conn{}
	}
	r.m[token] = c
}

func (r *expRegistry) drop(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, token)
}

func (r *expRegistry) get(token string) transport.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[token]
}

// expSender is the responder's expedited channel on one bulk connection.
type expSender struct {
	expSettings
	urgent transport.UrgentConn // urgent
	c      transport.Conn       // connection, stream
	owned  bool                 // c is closed with the bulk connection (a stream)
	next   uint32
	buf    []byte
}

// openExpSender sets up the channel s names for the bulk connection c.
func openExpSender(c transport.Conn, s expSettings, reg *expRegistry, timeout time.Duration) (*expSender, error) {
	if s.Every < 1 || s.Size < 1 || s.Size > MaxExpeditedSize {
		return nil, fmt.Errorf("expedited: every %d, size %d: want every >= 1 and size 1..%d", s.Every, s.Size, MaxExpeditedSize)
	}
	e := &expSender{expSettings: s}
	switch s.Via {
	case ViaUrgent:
		u, ok := c.(transport.UrgentConn)
		if !ok {
			return nil, errors.New("expedited via urgent: this connection has no TCP urgent data")
		}
		e.urgent = u
	case ViaConnection:
		if e.c = reg.get(s.Token); e.c == nil {
			return nil, fmt.Errorf("expedited via connection: no connection said hello with token %q", s.Token)
		}
	case ViaStream:
		ms, ok := c.(transport.MultistreamConn)
		if !ok {
			return nil, errors.New("expedited via stream: this connection carries one stream only")
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		st, err := ms.AcceptStream(ctx)
		if err != nil {
			return nil, fmt.Errorf("expedited via stream: %w", err)
		}
		st.SetDeadline(time.Now().Add(timeout))
		m, err := st.ReadMsg(nil)
		st.SetDeadline(time.Time{})
		h, herr := parseHeader(m)
		if err = firstErr(err, herr); err != nil || h.op != opExpHello || string(m[Header:]) != s.Token {
			st.Close()
			return nil, fmt.Errorf("expedited via stream: want the hello with token %q (%v)", s.Token, err)
		}
		e.c, e.owned = st, true
	default:
		return nil, fmt.Errorf("expedited via %q: urgent, connection or stream", s.Via)
	}
	return e, nil
}

// afterUnit sends the expedited message due after unit i (0-based), if
// one is.
func (e *expSender) afterUnit(i uint32) error {
	if (int(i)+1)%e.Every != 0 {
		return nil
	}
	e.buf = expeditedMsg(e.buf, e.next, e.Size, monoNow())
	var err error
	if e.urgent != nil {
		err = e.urgent.WriteUrgent(e.buf)
	} else {
		err = e.c.WriteMsg(e.buf)
	}
	if err != nil {
		return fmt.Errorf("expedited message %d (via %s): %w", e.next, e.Via, err)
	}
	e.next++
	return nil
}

func (e *expSender) Close() {
	if e != nil && e.owned {
		e.c.Close()
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// --- the initiator's side ------------------------------------------------

// expReceiver collects the expedited messages' delays.
type expReceiver struct {
	cfg     ExpeditedConfig
	token   string
	c       transport.Conn // connection, stream; nil for urgent
	mu      sync.Mutex
	delays  []float64
	err     error
	arrived chan struct{} // a message arrived or the reader ended
	done    chan struct{} // the reader ended
}

// openExpReceiver sets up the initiator's end of the channel for the bulk
// connection c before the settings name it.
func openExpReceiver(ctx context.Context, c transport.Conn, cfg ExpeditedConfig, timeout time.Duration) (*expReceiver, error) {
	r := &expReceiver{cfg: cfg, arrived: make(chan struct{}, 1), done: make(chan struct{})}
	switch cfg.Via {
	case ViaUrgent:
		u, ok := c.(transport.UrgentConn)
		if !ok {
			return nil, bad("expedited via urgent: this connection has no TCP urgent data")
		}
		if err := u.UrgentInline(); err != nil {
			return nil, fmt.Errorf("expedited via urgent: %w", err)
		}
		close(r.done)
		return r, nil
	case ViaConnection:
		if cfg.Dial == nil {
			return nil, errors.New("expedited via connection: no way to dial the second connection")
		}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		ec, err := cfg.Dial(dctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("expedited connection: %w", err)
		}
		r.c = ec
	case ViaStream:
		ms, ok := c.(transport.MultistreamConn)
		if !ok {
			return nil, bad("expedited via stream: this connection carries one stream only")
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		st, err := ms.OpenStream(sctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("expedited stream: %w", err)
		}
		r.c = st
	default:
		return nil, bad("expedited via %q: urgent, connection or stream", cfg.Via)
	}
	r.token = newToken()
	r.c.SetDeadline(time.Now().Add(timeout))
	err := r.c.WriteMsg(append(appendMsg(nil, header{op: opExpHello}, 0), r.token...))
	if err == nil && cfg.Via == ViaConnection {
		// the responder has registered the connection once it answers
		var m []byte
		if m, err = r.c.ReadMsg(nil); err == nil {
			if h, herr := parseHeader(m); herr != nil || h.op != opExpReady {
				err = fmt.Errorf("want the responder's ready, got op 0x%02x (%v); its protolab-spims may predate expedited data", h.op, herr)
			}
		}
	}
	if err != nil {
		r.c.Close()
		return nil, fmt.Errorf("expedited %s hello: %w", cfg.Via, err)
	}
	r.c.SetDeadline(time.Time{})
	go r.read()
	return r, nil
}

// settings are what the responder is told.
func (r *expReceiver) settings() *expSettings {
	return &expSettings{Via: r.cfg.Via, Every: r.cfg.Every, Size: r.cfg.Size, Token: r.token}
}

// read takes the separate channel's messages until it fails or closes.
func (r *expReceiver) read() {
	defer close(r.done)
	defer r.wake()
	var buf []byte
	for {
		m, err := r.c.ReadMsg(buf)
		if err != nil {
			r.fail(err)
			return
		}
		buf = m
		now := monoNow()
		h, err := parseHeader(m)
		if err == nil && h.op != opExpedited {
			err = fmt.Errorf("got op 0x%02x, want an expedited message", h.op)
		}
		if err == nil {
			err = r.take(h, m, now)
		}
		if err != nil {
			r.fail(err)
			return
		}
	}
}

func (r *expReceiver) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *expReceiver) wake() {
	select {
	case r.arrived <- struct{}{}:
	default:
	}
}

// take records expedited message m (header h) read at now.
func (r *expReceiver) take(h header, m []byte, now int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := uint32(len(r.delays))
	if h.seq != want {
		return fmt.Errorf("expedited message %d arrived, expected %d", h.seq, want)
	}
	if !bytes.Equal(m, expeditedMsg(nil, h.seq, r.cfg.Size, stampOf(h))) {
		return fmt.Errorf("expedited message %d: %d bytes, not what was sent", h.seq, len(m))
	}
	r.delays = append(r.delays, float64(now-stampOf(h))/1e9)
	r.wake()
	return nil
}

func (r *expReceiver) count() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delays), r.err
}

// wait blocks until n messages arrived on the separate channel, the
// reader failed, deadline passed or ctx ended.
func (r *expReceiver) wait(ctx context.Context, n int, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		got, err := r.count()
		if got >= n {
			return nil
		}
		if err != nil {
			return fmt.Errorf("expedited via %s: %d of %d arrived: %w", r.cfg.Via, got, n, err)
		}
		select {
		case <-r.arrived:
		case <-t.C:
			return fmt.Errorf("expedited via %s: %d of %d arrived in the timeout", r.cfg.Via, got, n)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *expReceiver) Close() {
	if r.c == nil {
		return
	}
	r.c.SetDeadline(time.Now()) // a QUIC stream's Close does not end a blocked read
	r.c.Close()
	<-r.done
}

// result summarizes the delays so far against the expected count.
func (r *expReceiver) result(expected int) *ExpeditedResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &ExpeditedResult{Via: r.cfg.Via, Every: r.cfg.Every, SizeBytes: r.cfg.Size, Expected: expected,
		Received: len(r.delays), DelaySeconds: Summarize(r.delays)}
}

// ExpeditedResult is bulk_get's expedited data: how many were due and
// arrived, and their delays (hand-over at the responder to read at the
// initiator, one kernel's CLOCK_MONOTONIC).
type ExpeditedResult struct {
	Via          string `json:"via"`
	Every        int    `json:"every_units"`
	SizeBytes    int    `json:"size_bytes"`
	Expected     int    `json:"expected"`
	Received     int    `json:"received"`
	DelaySeconds Stats  `json:"delay_seconds"`
}

// collect makes sure n expedited messages have arrived: via urgent by
// reading them from the bulk stream c (the last may follow the last unit),
// else by waiting for the reader of the separate channel.
func (r *expReceiver) collect(ctx context.Context, c transport.Conn, n int, deadline time.Time) error {
	if r.c != nil {
		return r.wait(ctx, n, deadline)
	}
	c.SetDeadline(deadline)
	for {
		got, _ := r.count()
		if got >= n {
			return nil
		}
		m, err := c.ReadMsg(nil)
		if err != nil {
			return fmt.Errorf("expedited via urgent: %d of %d arrived: %w", got, n, err)
		}
		now := monoNow()
		h, err := parseHeader(m)
		if err != nil || h.op != opExpedited {
			return fmt.Errorf("expedited via urgent: after the last unit, got op 0x%02x, want an expedited message (%v)", h.op, err)
		}
		if err := r.take(h, m, now); err != nil {
			return err
		}
	}
}
