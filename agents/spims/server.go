package spims

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"protolab/agents/transport"
)

// Serve is the responder of every procedure on ln until ctx ends; then it
// closes ln and every connection and returns nil. maxPayload is the
// largest payload one message of ln's transport carries (MaxPayload; 0:
// a stream's); a request past it or the other bounds in proto.go is
// refused before anything is allocated for it. A connection that sends
// something it cannot parse or refused is closed (logged through logf when
// non-nil), the others go on.
func Serve(ctx context.Context, ln transport.Listener, maxPayload int, live *Live, logf func(format string, a ...any)) error {
	if maxPayload <= 0 {
		maxPayload = transport.MaxFrame - Header
	}
	if live == nil {
		live = &Live{}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	reg := &expRegistry{}
	conns := map[transport.Conn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	var err error
	for {
		var c transport.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		live.conns.Add(1)
		live.connsTotal.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := serveConn(c, maxPayload, live, reg); err != nil && logf != nil {
				logf("responder: %s: %v", c.RemoteAddr(), err)
			}
			c.Close()
			live.conns.Add(-1)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("accept: %w", err)
}

// served is the responder's side of one connection: the mark, the bulk
// source, the stamps, counters and expedited channel its initiator asked
// for.
type served struct {
	c        transport.Conn
	dscp     int // -1: none asked
	src      source
	reg      *expRegistry
	stamp    bool // delays: the stop answer carries each unit's hand-over time
	counters bool // the stop answer carries the counters' increments
	exp      *expSender
}

// setDSCP marks the connection with d unless it already is.
func (cn *served) setDSCP(d int) error {
	if d == cn.dscp {
		return nil
	}
	if err := cn.c.SetDSCP(d); err != nil {
		return fmt.Errorf("dscp %d: %w", d, err)
	}
	cn.dscp = d
	return nil
}

// apply takes a bulk start's settings (JSON, see proto.go).
func (cn *served) apply(payload []byte) error {
	var s bulkSettings
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("bulk settings: %w", err)
	}
	if s.DSCP != nil {
		if *s.DSCP < 0 || *s.DSCP > 63 {
			return fmt.Errorf("dscp %d: want 0..63", *s.DSCP)
		}
		if err := cn.setDSCP(*s.DSCP); err != nil {
			return err
		}
	}
	if s.SourceData != nil {
		if err := s.SourceData.check("source_data"); err != nil {
			return err
		}
		src, err := openSource(*s.SourceData)
		if err != nil {
			return fmt.Errorf("source_data: %w", err)
		}
		cn.src.Close()
		cn.src = src
	}
	if s.Clock != "" {
		id, err := bootID()
		if err != nil {
			return err
		}
		if id != s.Clock {
			return fmt.Errorf("delays need one clock: the responder's kernel (boot_id %s) is not the initiator's (%s); run both on one host", id, s.Clock)
		}
		cn.stamp = true
	}
	cn.counters = cn.counters || s.SenderCounters
	if s.Expedited != nil {
		if s.Clock == "" {
			return errors.New("expedited data without clock: its delays need the stamps")
		}
		e, err := openExpSender(cn.c, *s.Expedited, cn.reg, DefaultTimeout)
		if err != nil {
			return err
		}
		cn.exp.Close()
		cn.exp = e
	}
	return nil
}

// refuse answers h with opError for err, counts it for reason and returns
// err: the connection is closed.
func refuse(c transport.Conn, h header, live *Live, reason string, err error) error {
	live.refuse(reason)
	c.WriteMsg(errorMsg(h.seq, err))
	return fmt.Errorf("refused: %w", err)
}

// serveConn answers one connection until it ends; a clean end is nil.
// maxPayload bounds what one message may ask for (see proto.go).
func serveConn(c transport.Conn, maxPayload int, live *Live, reg *expRegistry) error {
	cn := &served{c: c, dscp: -1, src: &memSource{}, reg: reg}
	defer func() {
		cn.src.Close()
		cn.exp.Close()
	}()
	var in, out []byte
	hello := false // an expedited hello came: this connection is an expedited channel
	for {
		m, err := c.ReadMsg(in)
		if err != nil {
			if isEnd(err) {
				return nil
			}
			return err
		}
		in = m
		h, err := parseHeader(m)
		if err != nil {
			return err
		}
		live.servedRecv.Add(uint64(len(m) - Header))
		switch h.op {
		case opRequest:
			if reason, err := checkRequest(h, maxPayload, false); err != nil {
				return refuse(c, h, live, reason, err)
			}
			if h.b&markDSCP != 0 {
				if err := cn.setDSCP(int(h.b & 63)); err != nil {
					c.WriteMsg(errorMsg(h.seq, err))
					return err
				}
			}
			out = appendMsg(out[:0], header{op: opResponse, seq: h.seq}, int(h.a))
			if err := c.WriteMsg(out); err != nil {
				return err
			}
			live.served.Add(1)
			live.servedSent.Add(uint64(h.a))
		case opBulkStart:
			settings := len(m) > Header
			if settings {
				if err := cn.apply(m[Header:]); err != nil {
					// Refused: the reason in place of the units, then the stop.
					if err := c.WriteMsg(errorMsg(h.seq, err)); err != nil {
						return err
					}
					if _, err := readStop(c); err != nil {
						return err
					}
					continue
				}
			}
			if reason, err := checkRequest(h, maxPayload, cn.stamp); err != nil {
				return refuse(c, h, live, reason, err)
			}
			if out, err = sendBulk(cn, h, settings, out, live); err != nil {
				return err
			}
		case opExpHello:
			// an expedited connection: kept for the bulk connection that
			// names its token, then read until the initiator closes it
			if hello {
				return refuse(c, h, live, refusedBadHello, errors.New("a second expedited hello on one connection"))
			}
			if n := len(m) - Header; n > MaxTokenBytes {
				return refuse(c, h, live, refusedBadHello, fmt.Errorf("expedited hello with a token of %d bytes, at most %d", n, MaxTokenBytes))
			}
			hello = true
			token := string(m[Header:])
			reg.put(token, c)
			defer reg.drop(token)
			if err := c.WriteMsg(appendMsg(nil, header{op: opExpReady, seq: h.seq}, 0)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected op 0x%02x", h.op)
		}
	}
}

// sendBulk streams h.a units of h.b bytes from src, waits for the
// initiator's stop and answers it with the sender-side time: from the
// first unit's fetch from src to the last write's return (what the writing
// application saw; socket buffers make it shorter than the receiver's for
// small transfers). applied adds the byte that says settings were taken.
// Units are stamped and expedited messages sent as cn's settings ask.
func sendBulk(cn *served, h header, applied bool, out []byte, live *Live) ([]byte, error) {
	c, src := cn.c, cn.src
	live.served.Add(1)
	var before map[string]uint64
	if cn.counters {
		before = c.Counters()
	}
	var rep stopReport
	t0 := time.Now()
	for i := uint32(0); i < h.a; i++ {
		m, err := src.msg(header{op: opBulkData, seq: i}, int(h.b))
		if err != nil {
			err = fmt.Errorf("bulk unit %d of %d: source_data: %w", i, h.a, err)
			c.WriteMsg(errorMsg(i, err)) // read by the initiator in place of the unit
			return out, err
		}
		err = c.WriteMsg(m)
		src.release()
		if err != nil {
			return out, fmt.Errorf("bulk unit %d of %d: %w", i, h.a, err)
		}
		if cn.stamp { // the whole unit is in the transport's hands now
			rep.HandedNs = append(rep.HandedNs, monoNow())
		}
		live.servedSent.Add(uint64(h.b))
		if cn.exp != nil && h.seq != ^uint32(0) {
			if err := cn.exp.afterUnit(i); err != nil {
				return out, err
			}
		}
	}
	el := time.Since(t0)
	if _, err := readStop(c); err != nil {
		return out, err
	}
	n := 16
	if applied {
		n = 17
	}
	out = appendMsg(out[:0], header{op: opBulkDone, seq: h.seq}, n)
	binary.BigEndian.PutUint64(out[Header:], uint64(el.Nanoseconds()))
	binary.BigEndian.PutUint64(out[Header+8:], uint64(h.a)*uint64(h.b))
	if applied {
		out[Header+16] = 1
	}
	if (cn.counters || cn.stamp) && h.seq != ^uint32(0) {
		if cn.counters {
			rep.Counters = map[string]uint64{}
			for k, v := range c.Counters() {
				rep.Counters[k] = v - before[k]
			}
		}
		js, err := json.Marshal(rep)
		if err != nil {
			return out, err
		}
		out = append(out, js...)
	}
	return out, c.WriteMsg(out)
}

// readStop reads the initiator's bulk stop.
func readStop(c transport.Conn) (header, error) {
	m, err := c.ReadMsg(nil)
	if err != nil {
		return header{}, fmt.Errorf("waiting for the bulk stop: %w", err)
	}
	sh, err := parseHeader(m)
	if err != nil || sh.op != opBulkStop {
		return sh, fmt.Errorf("want a bulk stop, got op 0x%02x (%v)", sh.op, err)
	}
	return sh, nil
}

// isEnd is the peer going away: EOF, reset, or our own close.
func isEnd(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
