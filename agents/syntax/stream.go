package syntax

import (
	"errors"
	"fmt"
	"math"

	"protolab/agents/dis"
)

// Stream is the flat value sequence the asn1c bridge
// (agents/syntax/asn1c/bridge.c) fills asn1c's structs from and reads them
// into, in the module's order: the CHOICE index (= PDU type) first, then
// integers, REALs as float64 bits, octet string lengths (contents in B) and
// SEQUENCE OF counts. Begin/End carry nothing.
type Stream struct {
	V        []uint64
	B        []byte
	iv, ib   int
	decoding bool
	err      error
}

var errStream = errors.New("value stream")

// ResetEncode empties s for encoding into its existing storage.
func (s *Stream) ResetEncode() {
	s.V, s.B, s.iv, s.ib, s.decoding, s.err = s.V[:0], s.B[:0], 0, 0, false, nil
}

// ResetDecode makes s read v and b.
func (s *Stream) ResetDecode(v []uint64, b []byte) {
	s.V, s.B, s.iv, s.ib, s.decoding, s.err = v, b, 0, 0, true, nil
}

func (s *Stream) fail(format string, a ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{errStream}, a...)...)
	}
}

func (s *Stream) next(max uint64, what string) uint64 {
	if s.iv >= len(s.V) {
		s.fail("ends before %s", what)
		return 0
	}
	x := s.V[s.iv]
	s.iv++
	if x > max {
		s.fail("%s %d above %d", what, x, max)
		return 0
	}
	return x
}

func (s *Stream) Decoding() bool { return s.decoding }
func (s *Stream) Err() error     { return s.err }
func (s *Stream) Begin()         {}
func (s *Stream) End()           {}

func (s *Stream) Alt(t dis.PDUType) dis.PDUType {
	if !s.decoding {
		s.V = append(s.V, uint64(t))
		return t
	}
	return dis.PDUType(s.next(uint64(dis.TypeRepairResponse), "CHOICE index"))
}

func (s *Stream) U8(v *uint8) {
	if !s.decoding {
		s.V = append(s.V, uint64(*v))
		return
	}
	*v = uint8(s.next(math.MaxUint8, "UInt8"))
}

func (s *Stream) U16(v *uint16) {
	if !s.decoding {
		s.V = append(s.V, uint64(*v))
		return
	}
	*v = uint16(s.next(math.MaxUint16, "UInt16"))
}

func (s *Stream) U32(v *uint32) {
	if !s.decoding {
		s.V = append(s.V, uint64(*v))
		return
	}
	*v = uint32(s.next(math.MaxUint32, "UInt32"))
}

func (s *Stream) F32(v *float32) {
	if !s.decoding {
		s.V = append(s.V, math.Float64bits(float64(*v)))
		return
	}
	*v = float32(math.Float64frombits(s.next(math.MaxUint64, "REAL")))
}

func (s *Stream) F64(v *float64) {
	if !s.decoding {
		s.V = append(s.V, math.Float64bits(*v))
		return
	}
	*v = math.Float64frombits(s.next(math.MaxUint64, "REAL"))
}

func (s *Stream) Octets(b []byte) {
	if !s.decoding {
		s.V = append(s.V, uint64(len(b)))
		s.B = append(s.B, b...)
		return
	}
	n := int(s.next(uint64(len(b)), "OCTET STRING length"))
	if n != len(b) && s.err == nil {
		s.fail("OCTET STRING of %d bytes, want %d", n, len(b))
	}
	if s.ib+n > len(s.B) {
		s.fail("OCTET STRING contents past the end")
		return
	}
	copy(b, s.B[s.ib:s.ib+n])
	s.ib += n
}

func (s *Stream) Records(n int) int {
	if !s.decoding {
		s.V = append(s.V, uint64(n))
		return n
	}
	return int(s.next(dis.MaxRecords, "SEQUENCE OF count"))
}

// PDUs holds one reusable struct per PDU type, as dis.Decoder does.
type PDUs [dis.TypeRepairResponse + 1]dis.PDU

// Get returns the struct for t (made on first use), nil for an unknown t.
func (ps *PDUs) Get(t dis.PDUType) dis.PDU {
	if !t.Known() {
		return nil
	}
	if ps[t] == nil {
		ps[t] = dis.New(t)
	}
	return ps[t]
}

// HeaderOf returns p's header.
func HeaderOf(p dis.PDU) *dis.Header {
	switch p := p.(type) {
	case *dis.EntityStatePDU:
		return &p.Header
	case *dis.FirePDU:
		return &p.Header
	case *dis.DetonationPDU:
		return &p.Header
	case *dis.CollisionPDU:
		return &p.Header
	case *dis.ServiceRequestPDU:
		return &p.Header
	case *dis.ResupplyOfferPDU:
		return &p.Header
	case *dis.ResupplyReceivedPDU:
		return &p.Header
	case *dis.ResupplyCancelPDU:
		return &p.Header
	case *dis.RepairCompletePDU:
		return &p.Header
	case *dis.RepairResponsePDU:
		return &p.Header
	}
	return nil
}

// DecodeStream fills a PDU of ps from a decoded stream and checks that the
// header's type and length fields agree with the CHOICE alternative and
// the PDU's native size (the native decoder's checks).
func DecodeStream(name string, s *Stream, ps *PDUs) (dis.PDU, error) {
	t := s.Alt(0)
	p := ps.Get(t)
	if p == nil {
		return nil, &DecodeError{Syntax: name, Reason: ReasonInternal, Err: s.Err()}
	}
	Walk(s, p)
	if err := s.Err(); err != nil {
		return nil, &DecodeError{Syntax: name, Reason: ReasonInternal, Err: err}
	}
	if s.iv != len(s.V) || s.ib != len(s.B) {
		return nil, &DecodeError{Syntax: name, Reason: ReasonInternal, Err: fmt.Errorf("%w: values left over", errStream)}
	}
	return p, CheckHeader(name, p)
}

// CheckHeader: the header's type must be p's and its length p.Len().
func CheckHeader(name string, p dis.PDU) error {
	h := HeaderOf(p)
	if h.PDUType != p.Type() {
		return &DecodeError{Syntax: name, Reason: ReasonHeader,
			Err: fmt.Errorf("header says %v inside a %v alternative", h.PDUType, p.Type())}
	}
	if int(h.Length) != p.Len() {
		return &DecodeError{Syntax: name, Reason: ReasonHeader,
			Err: fmt.Errorf("%v header's length field says %d, the PDU is %d bytes natively", p.Type(), h.Length, p.Len())}
	}
	return nil
}
