package spims

import (
	"encoding/binary"
	"fmt"

	"protolab/agents/transport"
)

// Every spims message (one transport message) starts with a 13-byte
// header, big-endian, followed by the payload (zero bytes):
//
//	0  op   uint8
//	1  seq  uint32  request number / data unit index
//	5  a    uint32  request: response payload bytes; bulk start: units
//	9  b    uint32  bulk start: bytes per unit
//	13 payload
//
// A size in a job is the payload; the header (and the transport's framing)
// comes on top.
const Header = 13

// Operations.
const (
	opRequest   = 1    // initiator: answer with a payload of a bytes
	opBulkStart = 2    // initiator: send a units of b bytes
	opBulkStop  = 3    // initiator: all units arrived
	opResponse  = 0x81 // responder: the answer to request seq
	opBulkData  = 0x82 // responder: unit seq
	opBulkDone  = 0x83 // responder: payload = sender ns (8 bytes) + bytes sent (8 bytes)
)

type header struct {
	op   uint8
	seq  uint32
	a, b uint32
}

// appendMsg appends a message of header h and n payload bytes (zero) to dst.
func appendMsg(dst []byte, h header, n int) []byte {
	dst = append(dst, h.op)
	dst = binary.BigEndian.AppendUint32(dst, h.seq)
	dst = binary.BigEndian.AppendUint32(dst, h.a)
	dst = binary.BigEndian.AppendUint32(dst, h.b)
	if need := len(dst) + n; need > cap(dst) {
		nd := make([]byte, len(dst), need)
		copy(nd, dst)
		dst = nd
	}
	end := len(dst) + n
	clear(dst[len(dst):end])
	return dst[:end]
}

func parseHeader(m []byte) (header, error) {
	if len(m) < Header {
		return header{}, fmt.Errorf("spims message of %d bytes, shorter than its %d-byte header", len(m), Header)
	}
	return header{op: m[0], seq: binary.BigEndian.Uint32(m[1:]), a: binary.BigEndian.Uint32(m[5:]), b: binary.BigEndian.Uint32(m[9:])}, nil
}

// MaxPayload is the largest payload one message of transport t carries
// (a datagram transport's is one IPv4 UDP datagram's).
func MaxPayload(t transport.Transport) int {
	if !t.Properties().Stream {
		return transport.UDPMaxMessage - Header
	}
	return transport.MaxFrame - Header
}
