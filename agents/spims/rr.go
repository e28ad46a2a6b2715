package spims

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"protolab/agents/transport"
)

// Path is one connection of an initiator: where it goes, from where, and
// the Conn (nil when the dial failed; Err says why).
type Path struct {
	Target, Source string
	Conn           transport.Conn
	Err            error
	Wins           int // dual mode: iterations this path answered first
	Skipped        int // dual mode: requests not queued because the path's queue was full
}

// Limits bound a run: a count of iterations (0: no count), a time limit
// (0: none), a timeout for each iteration and the late bound.
type Limits struct {
	Iterations int
	TimeLimit  time.Duration
	Timeout    time.Duration
	LateBound  time.Duration
	Block      int // iterations per block whose maximum the result keeps (0: none)
}

// Stop reasons.
const (
	StopIterations  = "iterations"
	StopTimeLimit   = "time_limit"
	StopInterrupted = "interrupted"
)

// Outcome is what a procedure measured.
type Outcome struct {
	Rec       *Recorder
	Stopped   string
	Start     time.Time
	Elapsed   time.Duration
	SentBytes int64 // payload
	RecvBytes int64 // payload
	Bulk      *BulkOutcome
}

// clock tracks a run's limits.
type clock struct {
	ctx      context.Context
	lim      Limits
	deadline time.Time // zero: none
}

func newClock(ctx context.Context, lim Limits, start time.Time) *clock {
	c := &clock{ctx: ctx, lim: lim}
	if lim.TimeLimit > 0 {
		c.deadline = start.Add(lim.TimeLimit)
	}
	return c
}

// stop is why iteration i must not start ("" when it may).
func (c *clock) stop(i int) string {
	switch {
	case c.ctx.Err() != nil:
		return StopInterrupted
	case c.lim.Iterations > 0 && i >= c.lim.Iterations:
		return StopIterations
	case !c.deadline.IsZero() && !time.Now().Before(c.deadline):
		return StopTimeLimit
	}
	return ""
}

// iterDeadline is when an iteration started at t0 times out, and whether
// that is the run's end rather than the timeout.
func (c *clock) iterDeadline(t0 time.Time) (time.Time, bool) {
	dl := t0.Add(c.lim.Timeout)
	if !c.deadline.IsZero() && c.deadline.Before(dl) {
		return c.deadline, true
	}
	return dl, false
}

// sleep waits d, cut short by the run's end; false when the run ended.
func (c *clock) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	if !c.deadline.IsZero() {
		d = min(d, time.Until(c.deadline))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// RRConfig is a request_response run.
type RRConfig struct {
	Limits
	Size         Dist  // request payload, bytes
	ResponseSize *Dist // response payload, bytes; nil: as large as the request
	Delay        *Dist // pause after each response, seconds; nil: none
	Seed         int64
	MaxPayload   int      // largest payload the transport carries
	Source       DataSpec // where request payloads come from; zero: memory (dual mode: memory only)
	DSCP         *int     // asked of the responder in every request; nil: nothing asked
}

// RequestResponse sends requests and times each round trip (SPIMS
// request_response): on one path, request i waits for its response; on
// two or more (dual mode) the same request goes on every live path and
// the first response wins. A response that comes after its iteration
// timed out is discarded by its sequence number.
func RequestResponse(ctx context.Context, paths []*Path, cfg RRConfig, live *Live) (*Outcome, error) {
	if len(paths) == 0 {
		return nil, errors.New("request_response: no path")
	}
	if len(paths) == 1 {
		if paths[0].Conn == nil {
			return nil, fmt.Errorf("request_response: %w", paths[0].Err)
		}
		return rrSingle(ctx, paths[0].Conn, cfg, live)
	}
	if a := cfg.Source.orMemory().Access; a != AccessMemory {
		return nil, fmt.Errorf("request_response: dual mode takes its requests from memory, not %s", a)
	}
	return rrMulti(ctx, paths, cfg, live)
}

// draws gives each iteration's sizes and pause from seeded streams.
type draws struct {
	cfg               RRConfig
	size, resp, delay *rand.Rand
	maxPayload        int
}

func newDraws(cfg RRConfig) *draws {
	mp := cfg.MaxPayload
	if mp <= 0 {
		mp = transport.MaxFrame - Header
	}
	return &draws{cfg: cfg, size: newRand(cfg.Seed, 1), resp: newRand(cfg.Seed, 2), delay: newRand(cfg.Seed, 3), maxPayload: mp}
}

// sizes draws the next request's payload n and response payload m.
func (d *draws) sizes() (n, m int) {
	n = d.cfg.Size.Size(d.size, d.maxPayload)
	m = n
	if d.cfg.ResponseSize != nil {
		m = d.cfg.ResponseSize.Size(d.resp, d.maxPayload)
	}
	return n, m
}

// header is request seq's, asking for m bytes back.
func (d *draws) header(seq uint32, m int) header {
	return header{op: opRequest, seq: seq, a: uint32(m), b: dscpWord(d.cfg.DSCP)}
}

// request builds request seq into buf (zero payload) and returns it with
// its sizes.
func (d *draws) request(buf []byte, seq uint32) ([]byte, int, int) {
	n, m := d.sizes()
	return appendMsg(buf[:0], d.header(seq, m), n), n, m
}

func (d *draws) pause() time.Duration {
	if d.cfg.Delay == nil {
		return 0
	}
	return d.cfg.Delay.Duration(d.delay)
}

// rrSingle is request_response on one connection. The round trip's clock
// starts before the request's payload is fetched from its source (for
// memory, writing the header), so reading a file or faulting in fresh pages
// is part of it.
func rrSingle(ctx context.Context, c transport.Conn, cfg RRConfig, live *Live) (*Outcome, error) {
	src, err := openSource(cfg.Source)
	if err != nil {
		return nil, fmt.Errorf("source_data: %w", err)
	}
	defer src.Close()
	out := &Outcome{Rec: &Recorder{LateBound: cfg.LateBound, Block: cfg.Block}, Start: time.Now()}
	clk := newClock(ctx, cfg.Limits, out.Start)
	stopWake := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stopWake()
	dr := newDraws(cfg)
	var buf []byte
	for i := 0; ; i++ {
		if out.Stopped = clk.stop(i); out.Stopped != "" {
			break
		}
		n, m := dr.sizes()
		t0 := time.Now()
		dl, atEnd := clk.iterDeadline(t0)
		c.SetDeadline(dl)
		if ctx.Err() != nil { // the wake-up may have come before this SetDeadline
			out.Stopped = StopInterrupted
			break
		}
		live.started()
		msg, err := src.msg(dr.header(uint32(i), m), n)
		if err != nil {
			return out.end(), fmt.Errorf("request %d: source_data: %w", i, err)
		}
		err = c.WriteMsg(msg)
		src.release()
		if err != nil {
			if ctx.Err() != nil {
				out.Stopped = StopInterrupted
				break
			}
			if transport.IsTimeout(err) && atEnd && !time.Now().Before(dl) {
				out.Stopped = StopTimeLimit
				break
			}
			return out.end(), fmt.Errorf("request %d: %w", i, err)
		}
		out.SentBytes += int64(n)
		for {
			reply, err := c.ReadMsg(buf)
			if err != nil {
				switch {
				case ctx.Err() != nil:
					out.Stopped = StopInterrupted
				case transport.IsTimeout(err) && atEnd && !time.Now().Before(dl):
					out.Stopped = StopTimeLimit
				case transport.IsTimeout(err):
					out.Rec.Timeout(t0)
					live.timedOut()
				default:
					return out.end(), fmt.Errorf("response %d: %w", i, err)
				}
				break
			}
			buf = reply
			d := time.Since(t0)
			h, err := parseHeader(reply)
			if err != nil {
				return out.end(), fmt.Errorf("response %d: %w", i, err)
			}
			if err := refusal(h, reply); err != nil {
				return out.end(), fmt.Errorf("response %d: %w", i, err)
			}
			if h.op != opResponse {
				return out.end(), fmt.Errorf("response %d: unexpected op 0x%02x", i, h.op)
			}
			if h.seq != uint32(i) {
				continue // the answer to a request that timed out
			}
			if got := len(reply) - Header; got != m {
				return out.end(), fmt.Errorf("response %d: %d payload bytes, asked for %d", i, got, m)
			}
			out.RecvBytes += int64(m)
			out.Rec.Add(d, t0)
			live.done(d, cfg.LateBound, n, m)
			break
		}
		if out.Stopped != "" || !clk.sleep(dr.pause()) {
			if out.Stopped == "" {
				out.Stopped = StopInterrupted
			}
			break
		}
	}
	return out.end(), nil
}

func (o *Outcome) end() *Outcome {
	o.Elapsed = time.Since(o.Start)
	return o
}

// reply is what a dual-mode reader saw on its path.
type reply struct {
	path int
	seq  uint32
	at   time.Time
	n    int   // payload bytes
	err  error // the path died
}

// pathQueue is the depth of a path's send queue in dual mode: a path that
// cannot take more (a black hole filling its socket buffer) skips requests
// rather than hold up the others.
const pathQueue = 64

// rrMulti sends every request on each live path and takes the first
// response (the SCIOP redundancy bound). Each path has a writer and a
// reader goroutine; replies carry the time they were read.
func rrMulti(ctx context.Context, paths []*Path, cfg RRConfig, live *Live) (*Outcome, error) {
	out := &Outcome{Rec: &Recorder{LateBound: cfg.LateBound, Block: cfg.Block}, Start: time.Now()}
	clk := newClock(ctx, cfg.Limits, out.Start)
	f := startFanout(paths)
	defer f.stop() // readers and writers end when the caller closes the Conns
	dr := newDraws(cfg)
	for i := 0; ; i++ {
		if out.Stopped = clk.stop(i); out.Stopped != "" {
			break
		}
		if !f.alive() {
			return out.end(), fmt.Errorf("request %d: every path failed: %s", i, pathErrors(paths))
		}
		msg, n, m := dr.request(nil, uint32(i)) // fresh: writers still hold earlier ones
		t0 := time.Now()
		live.started()
		f.send(i, msg)
		out.SentBytes += int64(n)
		dl, atEnd := clk.iterDeadline(t0)
		if err := f.await(ctx, out, live, cfg, i, t0, dl, atEnd, n, m); err != nil {
			return out.end(), err
		}
		if out.Stopped != "" {
			break
		}
		if !clk.sleep(dr.pause()) {
			out.Stopped = StopInterrupted
			break
		}
	}
	return out.end(), nil
}

// fanout is rrMulti's paths in flight: a send queue per open path, and
// the replies its writer and reader goroutines report.
type fanout struct {
	paths   []*Path
	replies chan reply
	done    chan struct{} // closed when rrMulti returns
	queues  []chan []byte // nil for a path without a Conn
	dead    []bool
}

// startFanout starts a writer and a reader for every path with a Conn;
// the others are dead from the start.
func startFanout(paths []*Path) *fanout {
	f := &fanout{
		paths:   paths,
		replies: make(chan reply, 256),
		done:    make(chan struct{}),
		queues:  make([]chan []byte, len(paths)),
		dead:    make([]bool, len(paths)),
	}
	for i, p := range paths {
		if p.Conn == nil {
			f.dead[i] = true
			continue
		}
		f.queues[i] = make(chan []byte, pathQueue)
		go f.write(i, p.Conn, f.queues[i])
		go f.read(i, p.Conn)
	}
	return f
}

// stop tells the goroutines rrMulti is done and closes the send queues.
func (f *fanout) stop() {
	close(f.done)
	for _, q := range f.queues {
		if q != nil {
			close(q)
		}
	}
}

// write sends path i's queued requests on c; after a failed write it
// reports the error and drains q.
func (f *fanout) write(i int, c transport.Conn, q chan []byte) {
	for msg := range q {
		if err := c.WriteMsg(msg); err != nil {
			select {
			case f.replies <- reply{path: i, err: fmt.Errorf("write: %w", err)}:
			case <-f.done:
			}
			for range q {
			}
			return
		}
	}
}

// read reports every response read on path i's c, until an error (which
// it reports too) or rrMulti is done.
func (f *fanout) read(i int, c transport.Conn) {
	var buf []byte
	for {
		m, err := c.ReadMsg(buf)
		r := reply{path: i, at: time.Now()}
		if err != nil {
			if transport.IsTimeout(err) {
				continue // udp gave a request up; the run's own timer counts it
			}
			r.err = fmt.Errorf("read: %w", err)
		} else if h, herr := parseHeader(m); herr == nil && refusal(h, m) != nil {
			r.err = refusal(h, m)
		} else if herr != nil || h.op != opResponse {
			r.err = fmt.Errorf("read: not a response (%v)", herr)
		} else {
			r.seq, r.n, buf = h.seq, len(m)-Header, m
		}
		select {
		case f.replies <- r:
		case <-f.done:
			return
		}
		if r.err != nil {
			return
		}
	}
}

// alive is whether any path is still alive.
func (f *fanout) alive() bool {
	for _, d := range f.dead {
		if !d {
			return true
		}
	}
	return false
}

// send queues request i's msg on every live path, rotating the order (the
// first queued is not always first sent); a full queue skips it.
func (f *fanout) send(i int, msg []byte) {
	for k := range f.queues {
		j := (i + k) % len(f.queues)
		if f.dead[j] {
			continue
		}
		select {
		case f.queues[j] <- msg:
		default:
			f.paths[j].Skipped++
		}
	}
}

// await waits until dl for the first response to request i (sent at t0,
// n bytes, asking for m) and records it, its timeout, or why the run
// stops (out.Stopped). The error ends the run: every path failed, or a
// response of the wrong size.
func (f *fanout) await(ctx context.Context, out *Outcome, live *Live, cfg RRConfig, i int, t0, dl time.Time, atEnd bool, n, m int) error {
	paths := f.paths
	timer := time.NewTimer(time.Until(dl))
	defer timer.Stop()
	for {
		select {
		case r := <-f.replies:
			if r.err != nil {
				f.dead[r.path] = true
				if paths[r.path].Err == nil {
					paths[r.path].Err = r.err
				}
				if !f.alive() {
					return fmt.Errorf("request %d: every path failed: %s", i, pathErrors(paths))
				}
				continue
			}
			if r.seq != uint32(i) {
				continue // a slower path's answer to an earlier request
			}
			if r.n != m {
				return fmt.Errorf("response %d on path %d: %d payload bytes, asked for %d", i, r.path+1, r.n, m)
			}
			d := r.at.Sub(t0)
			paths[r.path].Wins++
			out.RecvBytes += int64(m)
			out.Rec.Add(d, t0)
			live.done(d, cfg.LateBound, n, m)
			return nil
		case <-timer.C:
			if atEnd {
				out.Stopped = StopTimeLimit
			} else {
				out.Rec.Timeout(t0)
				live.timedOut()
			}
			return nil
		case <-ctx.Done():
			out.Stopped = StopInterrupted
			return nil
		}
	}
}

func pathErrors(paths []*Path) string {
	var parts []string
	for i, p := range paths {
		parts = append(parts, fmt.Sprintf("path %d (%s): %v", i+1, p.Target, p.Err))
	}
	return strings.Join(parts, "; ")
}
