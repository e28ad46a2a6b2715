package syntax

import (
	"bytes"
	"errors"
	mbits "math/bits"

	"protolab/agents/dis"
)

// The skinny envelope of Loper et al.: the invariant octets of each PDU are
// pre-encoded once per exercise and matched byte-wise on receipt; only on a
// mismatch does the general BER parse (the "ber" codec) run.
//
// On the wire skinny is BER of the same module, so any BER decoder reads it:
// the CHOICE alternative and the header use the indefinite length form (so
// their octets do not depend on the lengths of what follows) and every other
// component the definite, minimal form with DER's REAL normalisation. The
// invariant prefix of type t in exercise x is then
//
//	[t] 80  [0] 80  80 01 06  81 01 x  82 01 t  83 01 family
//
// (alternative, header, protocol version, exercise, PDU type, family: 16
// octets for the usual values). A receiver compares it byte-wise, takes those
// four values from its pre-encoded copy and reads the remaining components
// at their expected tags in order, straight into the PDU struct
// (skinny_fast.go: one function per type, no allocation); any difference
// (another prefix, a tag or length form it does not expect, a REAL not in
// base 2) sends the whole PDU to the general parse, counted in
// Stats.Fallback.

func init() {
	Register("skinny", "pre-encoded invariant BER octets per exercise, matched on receipt; general BER parse (ber) on mismatch", newSkinny)
}

type skinny struct {
	prefix   [dis.TypeRepairResponse + 1][]byte
	header   [dis.TypeRepairResponse + 1]dis.Header // the prefix's values
	w        berWriter
	pdus     PDUs
	fallback Codec
	stats    Stats
}

func newSkinny(o Options) (Codec, error) {
	ber, err := New("ber", o)
	if err != nil {
		return nil, errors.New("skinny needs the general BER parse as its fallback: " + err.Error())
	}
	return preEncoded(o.Exercise, ber), nil
}

// preEncoded returns a skinny codec with exercise ex's prefixes encoded.
func preEncoded(ex uint8, fallback Codec) *skinny {
	s := &skinny{fallback: fallback}
	for _, t := range dis.Types {
		var w berWriter
		w.alt(t)
		w.Begin()
		h := dis.NewHeader(t, ex, 0)
		pt, fam := uint8(t), uint8(h.ProtocolFamily)
		w.U8(&h.ProtocolVersion)
		w.U8(&h.ExerciseID)
		w.U8(&pt)
		w.U8(&fam)
		s.prefix[t] = w.b
		s.header[t] = h
	}
	return s
}

func (s *skinny) Name() string { return "skinny" }
func (s *skinny) Stats() Stats { return s.stats }

// Append pre-encodes nothing per call beyond copying: the prefix of p's
// type is copied when p's header carries the exercise's invariant values.
func (s *skinny) Append(dst []byte, p dis.PDU) ([]byte, error) {
	if p.Len() > dis.MaxPDUSize {
		return dst, errors.New("skinny encode: " + p.Type().String() + " PDU exceeds the DIS maximum size")
	}
	s.w.b = dst
	s.w.alt(p.Type())
	Walk(&s.w, p)
	s.w.End()
	return s.w.b, nil
}

func (s *skinny) Decode(b []byte) (dis.PDU, error) {
	if len(b) > 0 {
		t := dis.PDUType(b[0] &^ 0xA0)
		if b[0]&0xE0 == 0xA0 && t.Known() && bytes.HasPrefix(b, s.prefix[t]) {
			if p := s.match(b, t); p != nil {
				s.stats.Matched++
				return p, nil
			}
		}
	}
	s.stats.Fallback++
	p, err := s.fallback.Decode(b)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			return nil, &DecodeError{Syntax: "skinny", Reason: de.Reason, Err: err}
		}
		return nil, err
	}
	return p, nil
}

// berWriter encodes as described above. Component i of a SEQUENCE gets
// context tag [i] (AUTOMATIC TAGS); SEQUENCE OF elements get UNIVERSAL 16.
type berWriter struct {
	b     []byte
	stack []level
	list  bool // the next Begin opens a SEQUENCE OF
	// Definite makes every length definite: the output is then DER (tests
	// compare it with asn1c's DER).
	definite bool
}

type level struct {
	start int  // offset of the contents (definite) or -1 (indefinite)
	idx   int  // next component number
	seqOf bool // elements are UNIVERSAL 16
}

func (w *berWriter) Decoding() bool { return false }
func (w *berWriter) Err() error     { return nil }

func (w *berWriter) alt(t dis.PDUType) {
	w.stack = w.stack[:0]
	w.b = append(w.b, 0xA0|byte(t))
	w.open(!w.definite)
}

func (w *berWriter) Alt(t dis.PDUType) dis.PDUType { w.alt(t); return t }

func (w *berWriter) tag(constructed bool) byte {
	l := &w.stack[len(w.stack)-1]
	if l.seqOf {
		return 0x30
	}
	t := 0x80 | byte(l.idx)
	l.idx++
	if constructed {
		t |= 0x20
	}
	return t
}

func (w *berWriter) open(indefinite bool) {
	if indefinite {
		w.b = append(w.b, 0x80)
		w.stack = append(w.stack, level{start: -1, seqOf: w.list})
	} else {
		w.b = append(w.b, 0) // short-form placeholder
		w.stack = append(w.stack, level{start: len(w.b), seqOf: w.list})
	}
	w.list = false
}

func (w *berWriter) Begin() {
	w.b = append(w.b, w.tag(true))
	// the header (first component of the alternative) is indefinite too
	w.open(!w.definite && len(w.stack) == 1 && w.stack[0].idx == 1)
}

func (w *berWriter) End() {
	l := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	if l.start < 0 {
		w.b = append(w.b, 0, 0)
		return
	}
	n := len(w.b) - l.start
	switch {
	case n < 0x80:
		w.b[l.start-1] = byte(n)
	case n < 0x100:
		w.b = append(w.b, 0)
		copy(w.b[l.start+1:], w.b[l.start:])
		w.b[l.start-1], w.b[l.start] = 0x81, byte(n)
	default:
		w.b = append(w.b, 0, 0)
		copy(w.b[l.start+2:], w.b[l.start:])
		w.b[l.start-1], w.b[l.start], w.b[l.start+1] = 0x82, byte(n>>8), byte(n)
	}
}

func (w *berWriter) uint(v uint64) {
	t := w.tag(false)
	n := (mbits.Len64(v) + 8) / 8 // minimal two's complement octets of a non-negative value
	w.b = append(w.b, t, byte(n))
	for i := n - 1; i >= 0; i-- {
		w.b = append(w.b, byte(v>>(8*i)))
	}
}

func (w *berWriter) U8(v *uint8)   { w.uint(uint64(*v)) }
func (w *berWriter) U16(v *uint16) { w.uint(uint64(*v)) }
func (w *berWriter) U32(v *uint32) { w.uint(uint64(*v)) }
func (w *berWriter) F32(v *float32) {
	w.b = append(w.b, w.tag(false))
	w.b = appendReal(w.b, float64(*v))
}
func (w *berWriter) F64(v *float64) {
	w.b = append(w.b, w.tag(false))
	w.b = appendReal(w.b, *v)
}

func (w *berWriter) Octets(b []byte) {
	w.b = append(w.b, w.tag(false), byte(len(b))) // every OCTET STRING here is < 128 bytes
	w.b = append(w.b, b...)
}

func (w *berWriter) Records(n int) int { w.list = true; return n }

// DefiniteBER is skinny's writer with every length definite: DER, for tests
// that compare it with other DER encoders.
func DefiniteBER(p dis.PDU) []byte {
	w := berWriter{definite: true}
	w.alt(p.Type())
	Walk(&w, p)
	w.End()
	return w.b
}
