package spims

import (
	"context"
	"fmt"
	"time"

	"protolab/agents/transport"
)

// CDConfig is a connect_disconnect run. With Exchange each connection
// carries one request/response of the drawn sizes before it is closed;
// without, it is dial and close only.
type CDConfig struct {
	RRConfig
	Exchange bool
}

// ConnectDisconnect dials target, optionally exchanges one request and
// response, and closes, Iterations times, timing each (SPIMS
// connect_disconnect). The dial includes the transport's handshake (TLS,
// QUIC). A dial or exchange slower than Timeout is counted as a timeout;
// any other failure ends the run. first receives the first connection's
// Tuning and Counters (for the manifest) before it is closed.
func ConnectDisconnect(ctx context.Context, t transport.Transport, target string, o transport.Options, cfg CDConfig, live *Live, first func(transport.Conn)) (*Outcome, error) {
	out := &Outcome{Rec: &Recorder{LateBound: cfg.LateBound, Block: cfg.Block}, Start: time.Now()}
	clk := newClock(ctx, cfg.Limits, out.Start)
	dr := newDraws(cfg.RRConfig)
	var msg, buf []byte
	for i := 0; ; i++ {
		if out.Stopped = clk.stop(i); out.Stopped != "" {
			break
		}
		var n, m int
		if cfg.Exchange {
			msg, n, m = dr.request(msg, uint32(i))
		}
		live.started()
		t0 := time.Now()
		dl, atEnd := clk.iterDeadline(t0)
		dctx, cancel := context.WithDeadline(ctx, dl)
		c, err := t.Dial(dctx, target, o)
		cancel()
		if err == nil && cfg.Exchange {
			err = exchange(c, dl, msg, uint32(i), m, &buf)
		}
		if err == nil && i == 0 && first != nil {
			first(c)
		}
		if c != nil {
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}
		d := time.Since(t0)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				out.Stopped = StopInterrupted
			case atEnd && !time.Now().Before(dl):
				out.Stopped = StopTimeLimit
			case transport.IsTimeout(err):
				out.Rec.Timeout(t0)
				live.timedOut()
				continue
			default:
				return out.end(), fmt.Errorf("connection %d: %w", i, err)
			}
			break
		}
		out.SentBytes += int64(n)
		out.RecvBytes += int64(m)
		out.Rec.Add(d, t0)
		live.done(d, cfg.LateBound, n, m)
		if !clk.sleep(dr.pause()) {
			out.Stopped = StopInterrupted
			break
		}
	}
	return out.end(), nil
}

// exchange sends msg and reads the response to seq, of m payload bytes.
func exchange(c transport.Conn, dl time.Time, msg []byte, seq uint32, m int, buf *[]byte) error {
	c.SetDeadline(dl)
	if err := c.WriteMsg(msg); err != nil {
		return err
	}
	r, err := c.ReadMsg(*buf)
	if err != nil {
		return err
	}
	*buf = r
	h, err := parseHeader(r)
	if err != nil {
		return err
	}
	if err := refusal(h, r); err != nil {
		return err
	}
	if h.op != opResponse || h.seq != seq || len(r)-Header != m {
		return fmt.Errorf("want response %d of %d bytes, got op 0x%02x seq %d of %d bytes", seq, m, h.op, h.seq, len(r)-Header)
	}
	return nil
}
