package spims

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"protolab/agents/transport"
)

// fuzzConn is a transport.Conn over one fuzz input: ReadMsg takes the
// next length-prefixed frame of it with the stream transports' Decoder;
// WriteMsg keeps the largest message and fails after fuzzWrites (a peer
// that stops reading and goes away, which is what ends a bulk start of
// 2^32 units on a real connection).
type fuzzConn struct {
	in      *bytes.Reader
	dec     transport.Decoder
	writes  int
	largest int
}

const fuzzWrites = 1024

var errFuzzPeerGone = errors.New("fuzz peer gone")

func (c *fuzzConn) ReadMsg(buf []byte) ([]byte, error) { return c.dec.Next(c.in, buf) }

func (c *fuzzConn) WriteMsg(p []byte) error {
	if len(p) > transport.MaxFrame {
		return transport.ErrFrameTooLarge
	}
	c.largest = max(c.largest, len(p))
	if c.writes++; c.writes > fuzzWrites {
		return errFuzzPeerGone
	}
	return nil
}

func (c *fuzzConn) SetDeadline(time.Time) error { return nil }
func (c *fuzzConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (c *fuzzConn) Tuning() map[string]string   { return map[string]string{} }
func (c *fuzzConn) Counters() map[string]uint64 { return map[string]uint64{"retransmits": 1} }
func (c *fuzzConn) SetDSCP(int) error           { return nil }
func (c *fuzzConn) Close() error                { return nil }

// fuzzMaxPayload is the responder's bound in the fuzz: udp's message, so
// an allocation past the bound stands out against the input's size.
var fuzzMaxPayload = transport.UDPMaxMessage - Header

// frames is msgs as one stream of length-prefixed frames.
func frames(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out, _ = transport.AppendFrame(out, m)
	}
	return out
}

func settingsMsg(s bulkSettings) []byte {
	js, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return append(appendMsg(nil, header{op: opBulkStart, seq: ^uint32(0)}, 0), js...)
}

// FuzzServeConn feeds arbitrary byte streams to the responder's handler
// of one connection (serveConn, framed as every stream transport frames):
// it must not panic, must end, and must allocate no more than the input's
// messages and the two buffers of at most one message each (the
// response's and the bulk source's) cost. The 13-byte request for a 4 GiB
// response is a seed.
func FuzzServeConn(f *testing.F) {
	dscp := 46
	stop := appendMsg(nil, header{op: opBulkStop, seq: ^uint32(0)}, 0)
	f.Add(frames(appendMsg(nil, header{op: opRequest, seq: 1, a: 0xFFFFFFFF}, 0)))
	f.Add(frames(appendMsg(nil, header{op: opRequest, seq: 1, a: 100}, 32), appendMsg(nil, header{op: opRequest, seq: 2, a: 7, b: markDSCP | 46}, 0)))
	f.Add(frames(appendMsg(nil, header{op: opBulkStart, seq: 0, a: 10, b: 1000}, 0), appendMsg(nil, header{op: opBulkStop, seq: 0}, 0)))
	f.Add(frames(appendMsg(nil, header{op: opBulkStart, seq: 0, a: 0xFFFFFFFF, b: 0xFFFFFFFF}, 0)))
	f.Add(frames(appendMsg(nil, header{op: opBulkStart, seq: 0, a: 0xFFFFFFFF, b: 0}, 0)))
	f.Add(frames(settingsMsg(bulkSettings{DSCP: &dscp, SourceData: &DataSpec{Access: AccessVirtualMemory}, SenderCounters: true}), stop,
		appendMsg(nil, header{op: opBulkStart, seq: 0, a: 3, b: 5000}, 0), appendMsg(nil, header{op: opBulkStop, seq: 0}, 0)))
	f.Add(frames(settingsMsg(bulkSettings{Clock: "not this kernel", Expedited: &expSettings{Via: ViaConnection, Every: 1, Size: 16, Token: "ab"}}), stop))
	f.Add(frames(append(appendMsg(nil, header{op: opExpHello}, 0), "0123456789abcdef"...), append(appendMsg(nil, header{op: opExpHello}, 0), "x"...)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 5, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Contains(data, []byte(AccessFile)) {
			t.Skip("source_data file reads the responder's files; the fuzz stays off the filesystem")
		}
		c := &fuzzConn{in: bytes.NewReader(data)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveConn(c, fuzzMaxPayload, &Live{}, &expRegistry{})
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("serveConn still running after 10 s on %d bytes", len(data))
		}
		runtime.ReadMemStats(&after)
		msg := Header + fuzzMaxPayload
		// a response or unit, or a stop answer with a stamp per write
		if most := max(msg, Header+17+fuzzWrites*stampBytes+256); c.largest > most {
			t.Fatalf("wrote a message of %d bytes, bound %d", c.largest, most)
		}
		// Sizes read from the wire cost at most the two buffers of one
		// message each (the response's, the bulk source's), each grown to
		// at most twice it, in steps that sum to twice that; each input
		// byte may cost a few hundred (a one-byte JSON settings payload
		// makes a decoder), a frame cut short up to the Decoder's 64 KiB
		// step, the rest is the runtime's.
		bound := uint64(2*2*2*msg + 256*len(data) + 256<<10)
		if d := after.TotalAlloc - before.TotalAlloc; d > bound {
			t.Fatalf("%d input bytes allocated %d bytes, bound %d", len(data), d, bound)
		}
	})
}
