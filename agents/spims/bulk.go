package spims

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"protolab/agents/transport"
)

// BulkConfig is a bulk_get run: Iterations transfers of Count units of
// UnitSize payload bytes each, on one connection. Source is where the
// responder takes the units from, Destination where BulkGet puts them
// (zero values: memory); DSCP, when set, is the mark asked of the
// responder's side.
type BulkConfig struct {
	Limits
	Count       int
	UnitSize    int
	Source      DataSpec
	Destination DataSpec
	DSCP        *int
	// Delays: the responder stamps each unit (one kernel's clock, see
	// expedited.go) and the outcome has each unit's delay.
	Delays bool
	// SenderCounters: the responder reports its connection's counter
	// increments (retransmissions, packets lost) per transfer.
	SenderCounters bool
	// Expedited: expedited messages amid the units (implies Delays).
	Expedited *ExpeditedConfig
}

// settings are what the responder is told before the first transfer,
// nil when nothing. clock is this kernel's boot_id when delays are asked.
func (cfg BulkConfig) settings(clock string, exp *expReceiver) *bulkSettings {
	src := cfg.Source.orMemory()
	if cfg.DSCP == nil && src.Access == AccessMemory && clock == "" && !cfg.SenderCounters && exp == nil {
		return nil
	}
	s := &bulkSettings{DSCP: cfg.DSCP, Clock: clock, SenderCounters: cfg.SenderCounters}
	if src.Access != AccessMemory {
		s.SourceData = &src
	}
	if exp != nil {
		s.Expedited = exp.settings()
	}
	return s
}

// BulkOutcome is the throughput of each transfer, bytes/s, at the
// receiver (start request sent to last unit read and stored: no unit is in
// transit when the clock starts or stops, as SPIMS requires) and at the
// sender (the responder's first fetch from its source to its last write's
// return, sent back in its stop answer).
type BulkOutcome struct {
	Receiver []float64
	Sender   []float64
	// Delays: every unit's, hand-over at the responder to read here.
	UnitDelays []float64
	// SenderCounters: the responder's counter increments, summed.
	SenderCounters map[string]uint64
	// Expedited: the expedited messages so far.
	Expedited *ExpeditedResult
}

// BulkGet asks the responder for Count units and receives them into the
// destination, Iterations times (SPIMS bulk_get). Timeout bounds the wait
// for each unit; a transfer that stalls past it ends the run with an
// error, since the stream would be out of step. Settings for the
// responder (source, DSCP) go first, in a transfer of no units that is not
// timed; a responder that refuses them makes a *BadJob.
func BulkGet(ctx context.Context, c transport.Conn, cfg BulkConfig, live *Live) (out *Outcome, err error) {
	var clock string
	if cfg.Delays || cfg.Expedited != nil {
		if clock, err = bootID(); err != nil {
			return nil, err
		}
	}
	var exp *expReceiver
	if cfg.Expedited != nil {
		if exp, err = openExpReceiver(ctx, c, *cfg.Expedited, cfg.Timeout); err != nil {
			return nil, err
		}
		defer exp.Close()
	}
	if s := cfg.settings(clock, exp); s != nil {
		if err := bulkSetup(c, s, cfg.Timeout); err != nil {
			return nil, err
		}
	}
	dst, err := openSink(cfg.Destination)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("destination_data: %w", cerr)
		}
	}()
	out = &Outcome{Rec: &Recorder{LateBound: cfg.LateBound, Block: cfg.Block}, Start: time.Now(), Bulk: &BulkOutcome{}}
	perTransfer := 0 // expedited messages per transfer
	if exp != nil {
		perTransfer = cfg.Count / cfg.Expedited.Every
		defer func() { out.Bulk.Expedited = exp.result(perTransfer * out.Rec.Count()) }()
	}
	if cfg.SenderCounters {
		out.Bulk.SenderCounters = map[string]uint64{}
	}
	clk := newClock(ctx, cfg.Limits, out.Start)
	stopWake := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stopWake()
	bytes := int64(cfg.Count) * int64(cfg.UnitSize)
	r := &bulkRun{ctx: ctx, c: c, cfg: cfg, dst: dst, exp: exp, out: out, clock: clock}
	for i := 0; ; i++ {
		if out.Stopped = clk.stop(i); out.Stopped != "" {
			break
		}
		r.msg = appendMsg(r.msg[:0], header{op: opBulkStart, seq: uint32(i), a: uint32(cfg.Count), b: uint32(cfg.UnitSize)}, 0)
		r.readNs = r.readNs[:0]
		live.started()
		t0 := time.Now()
		c.SetDeadline(t0.Add(cfg.Timeout))
		if err := c.WriteMsg(r.msg); err != nil {
			return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: start: %w", i, err))
		}
		// The units come alone: read them in batches, unless each unit's read
		// time is measured (delays, expedited data), which a batch would hold
		// back until its last bytes came.
		if br, ok := c.(transport.BatchReader); ok && r.clock == "" {
			br.ExpectMessages(cfg.Count, Header+cfg.UnitSize)
		}
		if ok, err := r.units(i); !ok {
			return out.end(), err
		}
		d := time.Since(t0)
		if exp != nil { // the expedited messages due in this transfer, the last may follow its last unit
			if err := exp.collect(ctx, c, perTransfer*(i+1), time.Now().Add(cfg.Timeout)); err != nil {
				return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: %w", i, err))
			}
		}
		senderNs, ok, err := r.stop(i, bytes)
		if !ok {
			return out.end(), err
		}
		out.Rec.Add(d, t0)
		live.done(d, cfg.LateBound, 0, int(bytes))
		out.Bulk.Receiver = append(out.Bulk.Receiver, float64(bytes)/d.Seconds())
		out.Bulk.Sender = append(out.Bulk.Sender, float64(bytes)/(float64(max(senderNs, 1))/1e9))
	}
	return out.end(), nil
}

// bulkRun is one BulkGet run's connection and settings, and the buffers
// its transfers reuse.
type bulkRun struct {
	ctx    context.Context
	c      transport.Conn
	cfg    BulkConfig
	dst    sink
	exp    *expReceiver
	out    *Outcome
	clock  string  // the boot id (delays or expedited); set, readNs is kept
	msg    []byte  // the start and stop requests
	ans    []byte  // the stop answer
	readNs []int64 // delays: when each unit of this transfer was read
}

// units reads transfer i's cfg.Count units into the destination. When it
// is false the run ends with the error (nil: interrupted, out.Stopped).
func (r *bulkRun) units(i int) (bool, error) {
	ctx, c, cfg, out := r.ctx, r.c, r.cfg, r.out
	for u := 0; u < cfg.Count; u++ {
		if u%64 == 0 {
			c.SetDeadline(time.Now().Add(cfg.Timeout))
		}
		b, err := r.dst.buf(cfg.UnitSize)
		if err != nil {
			return false, fmt.Errorf("transfer %d: unit %d: %w", i, u, err)
		}
		m, err := readUnit(c, b, r.exp)
		if err != nil {
			return false, stopErr(ctx, out, fmt.Errorf("transfer %d: unit %d of %d: %w", i, u, cfg.Count, err))
		}
		var now int64
		if r.clock != "" { // a clock read is a system call (x/sys/unix has no vDSO): only when delays are kept
			now = monoNow()
		}
		h, err := parseHeader(m)
		if rerr := refusal(h, m); err == nil && rerr != nil {
			return false, fmt.Errorf("transfer %d: unit %d of %d: %w", i, u, cfg.Count, rerr)
		}
		if err != nil || h.op != opBulkData || h.seq != uint32(u) || len(m)-Header != cfg.UnitSize {
			return false, fmt.Errorf("transfer %d: unit %d of %d: got op 0x%02x seq %d with %d bytes (%v)", i, u, cfg.Count, h.op, h.seq, len(m)-Header, err)
		}
		if r.clock != "" {
			r.readNs = append(r.readNs, now)
		}
		if err := r.dst.put(m); err != nil {
			return false, fmt.Errorf("transfer %d: unit %d of %d: %w", i, u, cfg.Count, err)
		}
		out.RecvBytes += int64(cfg.UnitSize)
	}
	return true, nil
}

// stop ends transfer i of bytes bytes: it asks the responder to stop,
// checks its answer and takes the report in it (unit delays, sender
// counters). It returns the responder's sending time in ns; when it is
// false the run ends with the error (nil: interrupted, out.Stopped).
func (r *bulkRun) stop(i int, bytes int64) (uint64, bool, error) {
	ctx, c, cfg, out := r.ctx, r.c, r.cfg, r.out
	r.msg = appendMsg(r.msg[:0], header{op: opBulkStop, seq: uint32(i)}, 0)
	c.SetDeadline(time.Now().Add(cfg.Timeout))
	if err := c.WriteMsg(r.msg); err != nil {
		return 0, false, stopErr(ctx, out, fmt.Errorf("transfer %d: stop: %w", i, err))
	}
	m, err := c.ReadMsg(r.ans)
	if err != nil {
		return 0, false, stopErr(ctx, out, fmt.Errorf("transfer %d: stop answer: %w", i, err))
	}
	r.ans = m
	h, err := parseHeader(m)
	if (r.clock != "" || cfg.SenderCounters) && err == nil && h.op == opBulkDone && len(m) > Header+16 {
		var rep stopReport
		if err := json.Unmarshal(m[Header+16:], &rep); err != nil {
			return 0, false, fmt.Errorf("transfer %d: the stop answer's report: %w", i, err)
		}
		if r.clock != "" {
			if len(rep.HandedNs) != len(r.readNs) {
				return 0, false, fmt.Errorf("transfer %d: the responder's hand-over times of %d units, %d read", i, len(rep.HandedNs), len(r.readNs))
			}
			for u, t := range rep.HandedNs {
				out.Bulk.UnitDelays = append(out.Bulk.UnitDelays, float64(r.readNs[u]-t)/1e9)
			}
		}
		if out.Bulk.SenderCounters != nil {
			for k, v := range rep.Counters {
				out.Bulk.SenderCounters[k] += v
			}
		}
		m = m[:Header+16]
	}
	if err != nil || h.op != opBulkDone || len(m) != Header+16 {
		return 0, false, fmt.Errorf("transfer %d: want the stop answer, got op 0x%02x (%v)", i, h.op, err)
	}
	senderNs := binary.BigEndian.Uint64(m[Header:])
	if sent := binary.BigEndian.Uint64(m[Header+8:]); sent != uint64(bytes) {
		return 0, false, fmt.Errorf("transfer %d: responder sent %d bytes, asked for %d", i, sent, bytes)
	}
	return senderNs, true, nil
}

// readUnit reads the next message of the bulk stream into b, taking any
// in-band expedited messages (via urgent) before it.
func readUnit(c transport.Conn, b []byte, exp *expReceiver) ([]byte, error) {
	for {
		m, err := c.ReadMsg(b)
		if err != nil || exp == nil || exp.c != nil || len(m) < Header || m[0] != opExpedited {
			return m, err
		}
		now := monoNow()
		h, _ := parseHeader(m)
		if err := exp.take(h, m, now); err != nil {
			return nil, err
		}
		if cap(m) > cap(b) {
			b = m[:0]
		}
	}
}

// bulkSetup tells the responder s in a transfer of no units and checks
// that it took them.
func bulkSetup(c transport.Conn, s *bulkSettings, timeout time.Duration) error {
	payload, err := json.Marshal(s)
	if err != nil {
		return err
	}
	c.SetDeadline(time.Now().Add(timeout))
	const seq = ^uint32(0)
	if err := c.WriteMsg(append(appendMsg(nil, header{op: opBulkStart, seq: seq}, 0), payload...)); err != nil {
		return fmt.Errorf("bulk settings: %w", err)
	}
	if err := c.WriteMsg(appendMsg(nil, header{op: opBulkStop, seq: seq}, 0)); err != nil {
		return fmt.Errorf("bulk settings: stop: %w", err)
	}
	m, err := c.ReadMsg(nil)
	if err != nil {
		return fmt.Errorf("bulk settings %s: answer: %w", payload, err)
	}
	h, err := parseHeader(m)
	switch {
	case err != nil:
		return fmt.Errorf("bulk settings: answer: %w", err)
	case h.op == opError:
		return bad("the responder refused %s: %s", payload, m[Header:])
	case h.op == opBulkDone && len(m) == Header+17 && m[Header+16] == 1:
		return nil
	case h.op == opBulkDone:
		return bad("the responder ignored %s: its protolab-spims predates source_data and dscp for bulk_get; update it", payload)
	}
	return fmt.Errorf("bulk settings: want the stop answer, got op 0x%02x", h.op)
}

// stopErr is nil when the run was interrupted (the error is the wake-up),
// else err.
func stopErr(ctx context.Context, out *Outcome, err error) error {
	if ctx.Err() != nil {
		out.Stopped = StopInterrupted
		return nil
	}
	return err
}
