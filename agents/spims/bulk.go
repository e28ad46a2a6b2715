package spims

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"protolab/agents/transport"
)

// BulkConfig is a bulk_get run: Iterations transfers of Count units of
// UnitSize payload bytes each, on one connection.
type BulkConfig struct {
	Limits
	Count    int
	UnitSize int
}

// BulkOutcome is the throughput of each transfer, bytes/s, at the
// receiver (start request sent to last unit read: no unit is in transit
// when the clock starts or stops, as SPIMS requires) and at the sender (the
// responder's first write to its last write's return, sent back in its
// stop answer).
type BulkOutcome struct {
	Receiver []float64
	Sender   []float64
}

// BulkGet asks the responder for Count units and receives them, Iterations
// times (SPIMS bulk_get). Timeout bounds the wait for each unit; a
// transfer that stalls past it ends the run with an error, since the stream
// would be out of step.
func BulkGet(ctx context.Context, c transport.Conn, cfg BulkConfig, live *Live) (*Outcome, error) {
	out := &Outcome{Rec: &Recorder{LateBound: cfg.LateBound}, Start: time.Now(), Bulk: &BulkOutcome{}}
	clk := newClock(ctx, cfg.Limits, out.Start)
	stopWake := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stopWake()
	bytes := int64(cfg.Count) * int64(cfg.UnitSize)
	var msg, buf []byte
	for i := 0; ; i++ {
		if out.Stopped = clk.stop(i); out.Stopped != "" {
			break
		}
		msg = appendMsg(msg[:0], header{op: opBulkStart, seq: uint32(i), a: uint32(cfg.Count), b: uint32(cfg.UnitSize)}, 0)
		live.started()
		t0 := time.Now()
		c.SetDeadline(t0.Add(cfg.Timeout))
		if err := c.WriteMsg(msg); err != nil {
			return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: start: %w", i, err))
		}
		for u := 0; u < cfg.Count; u++ {
			if u%64 == 0 {
				c.SetDeadline(time.Now().Add(cfg.Timeout))
			}
			m, err := c.ReadMsg(buf)
			if err != nil {
				return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: unit %d of %d: %w", i, u, cfg.Count, err))
			}
			buf = m
			h, err := parseHeader(m)
			if err != nil || h.op != opBulkData || h.seq != uint32(u) || len(m)-Header != cfg.UnitSize {
				return out.end(), fmt.Errorf("transfer %d: unit %d of %d: got op 0x%02x seq %d with %d bytes (%v)", i, u, cfg.Count, h.op, h.seq, len(m)-Header, err)
			}
			out.RecvBytes += int64(cfg.UnitSize)
		}
		d := time.Since(t0)
		msg = appendMsg(msg[:0], header{op: opBulkStop, seq: uint32(i)}, 0)
		c.SetDeadline(time.Now().Add(cfg.Timeout))
		if err := c.WriteMsg(msg); err != nil {
			return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: stop: %w", i, err))
		}
		m, err := c.ReadMsg(buf)
		if err != nil {
			return out.end(), stopErr(ctx, out, fmt.Errorf("transfer %d: stop answer: %w", i, err))
		}
		h, err := parseHeader(m)
		if err != nil || h.op != opBulkDone || len(m) != Header+16 {
			return out.end(), fmt.Errorf("transfer %d: want the stop answer, got op 0x%02x (%v)", i, h.op, err)
		}
		senderNs := binary.BigEndian.Uint64(m[Header:])
		if sent := binary.BigEndian.Uint64(m[Header+8:]); sent != uint64(bytes) {
			return out.end(), fmt.Errorf("transfer %d: responder sent %d bytes, asked for %d", i, sent, bytes)
		}
		out.Rec.Add(d, t0)
		live.done(d, cfg.LateBound, 0, int(bytes))
		out.Bulk.Receiver = append(out.Bulk.Receiver, float64(bytes)/d.Seconds())
		out.Bulk.Sender = append(out.Bulk.Sender, float64(bytes)/(float64(max(senderNs, 1))/1e9))
	}
	return out.end(), nil
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
