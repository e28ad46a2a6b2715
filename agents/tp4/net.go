package tp4

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Endpoint is a Sender or a Receiver as the socket loop drives it.
type Endpoint interface {
	Input(b []byte, now time.Time)
	Output(now time.Time) []byte
	Deadline(now time.Time) time.Time
	Done() bool
}

// Loop runs an Endpoint over a UDP socket, one TPDU per datagram. Mu is
// held while the endpoint is touched, so Stats may be read under it from
// another goroutine.
type Loop struct {
	Conn *net.UDPConn
	// Peer is where TPDUs go; a zero Peer is learned from the first CR
	// that arrives (the receiver), after which other sources are dropped.
	Peer netip.AddrPort
	EP   Endpoint
	// Hook runs, under Mu, before each round of Output (the feeding user).
	Hook func(now time.Time)
	// Linger keeps answering (a repeated DR with a DC) this long after
	// the endpoint is done.
	Linger time.Duration
	Mu     *sync.Mutex

	// Foreign counts datagrams from other sources; WriteErrors failed sends.
	Foreign, WriteErrors uint64
}

type datagram struct {
	b    []byte
	from netip.AddrPort
}

// Run drives the endpoint until it is done (plus Linger) or ctx ends.
//
// Run stays one function: its reader goroutine, the goroutine's shutdown and the timer loop share one lifetime, read together.
func (l *Loop) Run(ctx context.Context) error {
	if l.Mu == nil {
		l.Mu = &sync.Mutex{}
	}
	l.Peer = netip.AddrPortFrom(l.Peer.Addr().Unmap(), l.Peer.Port())
	in := make(chan datagram, 256)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(in)
		for {
			buf := make([]byte, 65536)
			n, from, err := l.Conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && rctx.Err() == nil {
					continue
				}
				if rctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
			select {
			case in <- datagram{buf[:n], from}:
			case <-rctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		_ = l.Conn.SetReadDeadline(time.Now())
		wg.Wait()
		_ = l.Conn.SetReadDeadline(time.Time{})
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var doneAt time.Time
	for {
		now := time.Now()
		l.Mu.Lock()
		if l.Hook != nil {
			l.Hook(now)
		}
		for b := l.EP.Output(now); b != nil; b = l.EP.Output(now) {
			if !l.Peer.IsValid() {
				continue
			}
			if _, err := l.Conn.WriteToUDPAddrPort(b, l.Peer); err != nil {
				l.WriteErrors++
			}
		}
		done := l.EP.Done()
		d := l.EP.Deadline(now)
		l.Mu.Unlock()
		if done {
			if doneAt.IsZero() {
				doneAt = now
			}
			if now.Sub(doneAt) >= l.Linger {
				return nil
			}
			if t := doneAt.Add(l.Linger); d.IsZero() || t.Before(d) {
				d = t
			}
		}
		wait := time.Hour
		if !d.IsZero() {
			wait = max(0, d.Sub(now))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case g, ok := <-in:
			if !ok {
				return errors.New("tp4: socket closed")
			}
			now := time.Now()
			l.Mu.Lock()
			if !l.Peer.IsValid() {
				if p, err := Decode(g.b); err == nil && p.Type == CR {
					l.Peer = g.from
				}
			}
			if g.from == l.Peer || !l.Peer.IsValid() {
				l.EP.Input(g.b, now)
			} else {
				l.Foreign++
			}
			l.Mu.Unlock()
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}
