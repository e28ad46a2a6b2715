//go:build cgo

package asn1c

/*
#cgo CFLAGS: -I${SRCDIR} -O2 -w
#cgo LDFLAGS: -lm
#include "bridge.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"protolab/agents/dis"
	"protolab/agents/syntax"
)

func init() {
	C.dis_init()
	syntax.Register("ber", "ASN.1 BER (asn1c; encodes DER, decodes any BER incl. indefinite lengths)", newCodec("ber", C.DIS_BER))
	syntax.Register("der", "ASN.1 DER (asn1c; rejects non-DER input)", newCodec("der", C.DIS_DER))
	syntax.Register("uper", "ASN.1 unaligned PER (asn1c)", newCodec("uper", C.DIS_UPER))
}

// Stream capacity: an Entity State PDU with 255 articulation parameters is
// 45 + 255*6 values and 26 + 255*8 octets.
const (
	maxValues = 2048
	maxOctets = 4096
)

type codec struct {
	name   string
	rules  C.int
	s      syntax.Stream
	v      [maxValues]uint64
	b      [maxOctets]byte
	nv, nb C.size_t
	pdus   syntax.PDUs
}

func newCodec(name string, rules C.int) func(syntax.Options) (syntax.Codec, error) {
	return func(syntax.Options) (syntax.Codec, error) {
		c := &codec{name: name, rules: rules}
		c.s.V, c.s.B = c.v[:0], c.b[:0]
		return c, nil
	}
}

func (c *codec) Name() string        { return c.name }
func (c *codec) Stats() syntax.Stats { return syntax.Stats{} }

var errText = map[C.int]string{
	C.DIS_EMALFORMED:  syntax.ReasonMalformed,
	C.DIS_ETRUNCATED:  syntax.ReasonTruncated,
	C.DIS_ETRAILING:   syntax.ReasonTrailing,
	C.DIS_ECONSTRAINT: syntax.ReasonConstraint,
	C.DIS_EUNKNOWNTAG: syntax.ReasonUnknownTag,
	C.DIS_EINDEFINITE: syntax.ReasonIndefinite,
	C.DIS_ENOTDER:     syntax.ReasonNotDER,
	C.DIS_ESTREAM:     syntax.ReasonInternal,
	C.DIS_EENCODE:     syntax.ReasonInternal,
	C.DIS_ENOMEM:      syntax.ReasonInternal,
}

func (c *codec) Append(dst []byte, p dis.PDU) ([]byte, error) {
	if n := p.Len(); n > dis.MaxPDUSize {
		return dst, fmt.Errorf("%s encode: %v PDU of %d bytes exceeds %d", c.name, p.Type(), n, dis.MaxPDUSize)
	}
	c.s.V, c.s.B = c.v[:0], c.b[:0]
	c.s.ResetEncode()
	c.s.Alt(p.Type())
	syntax.Walk(&c.s, p)
	if len(c.s.V) > maxValues || len(c.s.B) > maxOctets {
		return dst, fmt.Errorf("%s encode: %v PDU has too many records (max %d each)", c.name, p.Type(), dis.MaxRecords)
	}
	// DER of a DIS PDU is at most about twice its native size; be generous.
	need := 4*p.Len() + 256
	if cap(dst)-len(dst) < need {
		nd := make([]byte, len(dst), len(dst)+need)
		copy(nd, dst)
		dst = nd
	}
	out := dst[len(dst):cap(dst)]
	var octets *C.uint8_t
	if len(c.s.B) > 0 {
		octets = (*C.uint8_t)(unsafe.Pointer(&c.s.B[0]))
	}
	rc := C.dis_encode(c.rules, (*C.uint64_t)(unsafe.Pointer(&c.s.V[0])), C.size_t(len(c.s.V)),
		octets, C.size_t(len(c.s.B)),
		(*C.uint8_t)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &c.nv)
	if rc != C.DIS_OK {
		return dst, fmt.Errorf("%s encode: %v PDU: asn1c bridge error %d (%s)", c.name, p.Type(), int(rc), errText[rc])
	}
	return dst[:len(dst)+int(c.nv)], nil
}

func (c *codec) Decode(b []byte) (dis.PDU, error) {
	if len(b) == 0 {
		return nil, &syntax.DecodeError{Syntax: c.name, Reason: syntax.ReasonTruncated, Err: fmt.Errorf("empty input")}
	}
	if len(b) > 4*dis.MaxPDUSize {
		return nil, &syntax.DecodeError{Syntax: c.name, Reason: syntax.ReasonTooLarge,
			Err: fmt.Errorf("%d bytes, at most %d accepted", len(b), 4*dis.MaxPDUSize)}
	}
	c.nv, c.nb = maxValues, maxOctets
	rc := C.dis_decode(c.rules, (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b)),
		(*C.uint64_t)(unsafe.Pointer(&c.v[0])), &c.nv, (*C.uint8_t)(unsafe.Pointer(&c.b[0])), &c.nb)
	if rc != C.DIS_OK {
		return nil, &syntax.DecodeError{Syntax: c.name, Reason: errText[rc], Err: fmt.Errorf("asn1c rejected %d bytes", len(b))}
	}
	c.s.ResetDecode(c.v[:c.nv], c.b[:c.nb])
	return syntax.DecodeStream(c.name, &c.s, &c.pdus)
}
