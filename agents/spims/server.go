package spims

import (
	"context"
	"encoding/binary"
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
// closes ln and every connection and returns nil. A connection that sends
// something it cannot parse is closed (logged through logf when non-nil),
// the others go on.
func Serve(ctx context.Context, ln transport.Listener, live *Live, logf func(format string, a ...any)) error {
	if live == nil {
		live = &Live{}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
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
			if err := serveConn(c, live); err != nil && logf != nil {
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

// serveConn answers one connection until it ends; a clean end is nil.
func serveConn(c transport.Conn, live *Live) error {
	var in, out []byte
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
			out = appendMsg(out[:0], header{op: opResponse, seq: h.seq}, int(h.a))
			if err := c.WriteMsg(out); err != nil {
				return err
			}
			live.served.Add(1)
			live.servedSent.Add(uint64(h.a))
		case opBulkStart:
			if out, err = sendBulk(c, h, out, live); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected op 0x%02x", h.op)
		}
	}
}

// sendBulk streams h.a units of h.b bytes, waits for the initiator's stop
// and answers it with the sender-side time: from the first write's start
// to the last write's return (what the writing application saw; socket
// buffers make it shorter than the receiver's for small transfers).
func sendBulk(c transport.Conn, h header, out []byte, live *Live) ([]byte, error) {
	live.served.Add(1)
	out = appendMsg(out[:0], header{op: opBulkData}, int(h.b))
	t0 := time.Now()
	for i := uint32(0); i < h.a; i++ {
		binary.BigEndian.PutUint32(out[1:], i)
		if err := c.WriteMsg(out); err != nil {
			return out, fmt.Errorf("bulk unit %d of %d: %w", i, h.a, err)
		}
		live.servedSent.Add(uint64(h.b))
	}
	el := time.Since(t0)
	m, err := c.ReadMsg(nil)
	if err != nil {
		return out, fmt.Errorf("waiting for the bulk stop: %w", err)
	}
	if sh, err := parseHeader(m); err != nil || sh.op != opBulkStop {
		return out, fmt.Errorf("want a bulk stop, got op 0x%02x (%v)", sh.op, err)
	}
	out = appendMsg(out[:0], header{op: opBulkDone, seq: h.seq}, 16)
	binary.BigEndian.PutUint64(out[Header:], uint64(el.Nanoseconds()))
	binary.BigEndian.PutUint64(out[Header+8:], uint64(h.a)*uint64(h.b))
	return out, c.WriteMsg(out)
}

// isEnd is the peer going away: EOF, reset, or our own close.
func isEnd(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
