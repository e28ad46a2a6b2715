package spims

import (
	"encoding/binary"
	"fmt"

	"protolab/agents/transport"
)

// Every spims message (one transport message) starts with a 13-byte
// header, big-endian, followed by the payload (zero bytes, or the data
// units of a job's source_data):
//
//	0  op   uint8
//	1  seq  uint32  request number / data unit index
//	5  a    uint32  request: response payload bytes; bulk start: units
//	9  b    uint32  bulk start: bytes per unit; request: 0, or markDSCP|dscp
//	13 payload
//
// A size in a job is the payload; the header (and the transport's framing)
// comes on top.
//
// Settings that hold for the rest of a connection travel in two
// backward-compatible ways (a responder that predates them ignores both,
// an initiator that predates them never sends them):
//
//   - a request whose b has markDSCP set asks the responder to mark this
//     connection's replies with the DSCP in b's low 6 bits (before it
//     answers that request); 0 asks nothing;
//   - a bulk start may carry a JSON payload, bulkSettings: {"dscp": 46,
//     "source_data": {"access": "file", "path": "/srv/spims/data"}}. The
//     initiator sends it once per connection, in a transfer of no units
//     before its clock starts; the responder applies it and answers the
//     stop with a 17th payload byte 1 (a responder that predates settings
//     answers 16 bytes, which the initiator reports), or refuses with
//     opError in place of the units (the file is missing, ...) and then
//     reads the stop.
//
// bulkSettings may also ask for delays ("clock": the initiator's kernel
// boot_id; the responder refuses unless it is its own) and for the
// sender's counters ("sender_counters"): each transfer's stop answer then
// goes on, after its 16 bytes, with a JSON stopReport: "handed_ns", the
// CLOCK_MONOTONIC nanoseconds at which each unit's write returned (the
// whole unit in the transport's hands), and "counters", the connection's
// counter increments over the transfer. And for expedited data
// ("expedited": see expedited.go), whose messages are opExpedited with the
// CLOCK_MONOTONIC nanoseconds of the moment the responder asked to send
// them in a and b. A second connection or stream for them starts with
// opExpHello carrying the token the settings name; on a connection the
// responder answers opExpReady.
const Header = 13

// Operations.
const (
	opRequest   = 1    // initiator: answer with a payload of a bytes
	opBulkStart = 2    // initiator: send a units of b bytes
	opBulkStop  = 3    // initiator: all units arrived
	opResponse  = 0x81 // responder: the answer to request seq
	opBulkData  = 0x82 // responder: unit seq
	opBulkDone  = 0x83 // responder: payload = sender ns (8 bytes) + bytes sent (8 bytes) [+ 1: settings applied]
	opError     = 0x84 // responder: payload = why it cannot answer (text), in place of a response or a unit
	opExpHello  = 4    // initiator: this connection or stream carries expedited messages; payload = token
	opExpedited = 0x85 // responder: expedited message seq, a/b = stamp
	opExpReady  = 0x86 // responder: the expedited connection is registered
)

// markDSCP in a request's b says its low 6 bits are a DSCP for the
// responder's side of the connection.
const markDSCP = 0x100

// dscpWord is a request's b for the DSCP d (nil: none).
func dscpWord(d *int) uint32 {
	if d == nil {
		return 0
	}
	return markDSCP | uint32(*d)&63
}

// bulkSettings is the payload of a bulk start that changes the
// responder's side of the connection from then on.
type bulkSettings struct {
	DSCP           *int         `json:"dscp,omitempty"`
	SourceData     *DataSpec    `json:"source_data,omitempty"`
	Clock          string       `json:"clock,omitempty"`
	SenderCounters bool         `json:"sender_counters,omitempty"`
	Expedited      *expSettings `json:"expedited,omitempty"`
}

// stopReport follows a stop answer's 16 bytes when delays or the sender's
// counters were asked for.
type stopReport struct {
	HandedNs []int64           `json:"handed_ns,omitempty"`
	Counters map[string]uint64 `json:"counters,omitempty"`
}

type header struct {
	op   uint8
	seq  uint32
	a, b uint32
}

// putHeader writes h over the first Header bytes of m.
func putHeader(m []byte, h header) {
	m[0] = h.op
	binary.BigEndian.PutUint32(m[1:], h.seq)
	binary.BigEndian.PutUint32(m[5:], h.a)
	binary.BigEndian.PutUint32(m[9:], h.b)
}

// appendMsg appends a message of header h and n payload bytes (zero) to dst.
func appendMsg(dst []byte, h header, n int) []byte {
	dst = append(dst, h.op)
	dst = binary.BigEndian.AppendUint32(dst, h.seq)
	dst = binary.BigEndian.AppendUint32(dst, h.a)
	dst = binary.BigEndian.AppendUint32(dst, h.b)
	dst = grown(dst, len(dst)+n)
	end := len(dst) + n
	clear(dst[len(dst):end])
	return dst[:end]
}

// grown is b, its storage enlarged when it holds fewer than n bytes: to n,
// or twice its capacity up to one frame when that is more, so that a run of
// ever larger messages allocates at most about twice the largest.
func grown(b []byte, n int) []byte {
	if n <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), max(n, min(2*cap(b), transport.MaxFrame)))
	copy(nb, b)
	return nb
}

// errorMsg is the responder's opError message for seq.
func errorMsg(seq uint32, err error) []byte {
	return append(appendMsg(nil, header{op: opError, seq: seq}, 0), err.Error()...)
}

// refusal is the error a responder's opError message m reports; nil when
// m is something else.
func refusal(h header, m []byte) error {
	if h.op != opError {
		return nil
	}
	return fmt.Errorf("responder: %s", m[Header:])
}

func parseHeader(m []byte) (header, error) {
	if len(m) < Header {
		return header{}, fmt.Errorf("spims message of %d bytes, shorter than its %d-byte header", len(m), Header)
	}
	return header{op: m[0], seq: binary.BigEndian.Uint32(m[1:]), a: binary.BigEndian.Uint32(m[5:]), b: binary.BigEndian.Uint32(m[9:])}, nil
}

// Bounds on what one message may ask of the responder, each checked
// before anything is allocated for it. A message past one is refused: the
// responder answers opError naming the bound, counts it
// (protolab_spims_refused_messages_total) and closes the connection.
//
//   - a request's response payload (a) and a bulk start's bytes per unit
//     (b): at most the listener's transport's MaxPayload (Serve's
//     maxPayload), so one 13-byte request costs at most one message of
//     that size (16 MiB on a stream, 64 KiB over udp), not a or b bytes;
//   - a bulk start's units (a) when its stop answer carries each unit's
//     hand-over time: MaxStampedUnits, so that the times fit one message;
//   - an expedited hello's token: MaxTokenBytes, one hello per connection.
//
// A bulk start's units without stamps cost no memory (one buffer is
// reused for all of them) and go only as fast as the initiator reads.
const (
	// MaxStampedUnits bounds a bulk_get transfer with delays or expedited
	// data: the stop answer's hand-over times (at most 20 bytes of JSON
	// each) fit one message of a stream transport.
	MaxStampedUnits = 1 << 19
	// MaxTokenBytes bounds an expedited hello's token (newToken's has 16
	// hex digits).
	MaxTokenBytes = 64
)

// stampBytes is the most one hand-over time takes in a stop report's JSON
// (19 digits and a comma).
const stampBytes = 20

// checkRequest says why the responder refuses h, nil when it takes it;
// maxPayload is the transport's (MaxPayload), stamped whether bulk units
// are stamped on this connection.
func checkRequest(h header, maxPayload int, stamped bool) (reason string, err error) {
	switch h.op {
	case opRequest:
		if uint64(h.a) > uint64(maxPayload) {
			return refusedTooLarge, fmt.Errorf("request %d asks for a response of %d payload bytes, more than one message of this transport carries (%d)", h.seq, h.a, maxPayload)
		}
	case opBulkStart:
		if uint64(h.b) > uint64(maxPayload) {
			return refusedTooLarge, fmt.Errorf("bulk start %d asks for units of %d payload bytes, more than one message of this transport carries (%d)", h.seq, h.b, maxPayload)
		}
		if stamped && h.a > MaxStampedUnits {
			return refusedTooManyUnits, fmt.Errorf("bulk start %d asks for %d units with delays, more than their hand-over times fit in one stop answer (%d units)", h.seq, h.a, MaxStampedUnits)
		}
	}
	return "", nil
}

// MaxPayload is the largest payload one message of transport t carries
// (a datagram transport's is one IPv4 UDP datagram's).
func MaxPayload(t transport.Transport) int {
	if !t.Properties().Stream {
		return transport.UDPMaxMessage - Header
	}
	return transport.MaxFrame - Header
}
