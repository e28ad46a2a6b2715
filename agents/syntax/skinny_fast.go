package syntax

import (
	"math"
	mbits "math/bits"

	"protolab/agents/dis"
)

// skinny's fast path: once a PDU's prefix has matched, one function per
// type reads the remaining components in the module's order (walk.go's) at
// the tags berWriter gives them, straight into the PDU struct: no interface
// call per value, no allocation (record slices are reused). The offsets are
// known only as far as BER allows: an INTEGER's or a REAL's contents are
// minimal, so each value's length octet is read, not assumed.
//
// It accepts exactly what the Walk-driven matcher it replaced accepted
// (skinny_test.go keeps that one as the reference and compares the two on
// every sample and many mutations of it).

// match decodes b, whose prefix of type t has matched, into the codec's
// struct of type t; nil when anything after the prefix differs from what
// berWriter writes.
//
// match stays one function: it is the unrolled fast path, each PDU type's fields in berWriter's order, inline for speed.
func (s *skinny) match(b []byte, t dis.PDUType) dis.PDU {
	r := fastReader{b: b, pos: len(s.prefix[t]), ok: true}
	p := s.pdus.Get(t)
	var h *dis.Header
	switch p := p.(type) {
	case *dis.EntityStatePDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.EntityID)
		p.ForceID = r.u8(0x82)
		r.entityType(0xA3, &p.EntityType)
		r.entityType(0xA4, &p.AlternativeEntityType)
		r.vec3F(0xA5, &p.LinearVelocity)
		r.vec3D(0xA6, &p.Location)
		e := r.begin(0xA7)
		p.Orientation.Psi = r.f32(0x80)
		p.Orientation.Theta = r.f32(0x81)
		p.Orientation.Phi = r.f32(0x82)
		r.end(e)
		p.Appearance = r.u32(0x88)
		e = r.begin(0xA9)
		p.DeadReckoning.Algorithm = r.u8(0x80)
		r.octets(0x81, p.DeadReckoning.OtherParameters[:])
		r.vec3F(0xA2, &p.DeadReckoning.LinearAcceleration)
		r.vec3F(0xA3, &p.DeadReckoning.AngularVelocity)
		r.end(e)
		e = r.begin(0xAA)
		p.Marking.CharacterSet = r.u8(0x80)
		r.octets(0x81, p.Marking.Characters[:])
		r.end(e)
		p.Capabilities = r.u32(0x8B)
		p.ArticulationParameters = r.articulations(0xAC, p.ArticulationParameters)
	case *dis.FirePDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.FiringEntityID)
		r.entityID(0xA2, &p.TargetEntityID)
		r.entityID(0xA3, &p.MunitionID)
		r.eventID(0xA4, &p.EventID)
		p.FireMissionIndex = r.u32(0x85)
		r.vec3D(0xA6, &p.Location)
		r.burst(0xA7, &p.Burst)
		r.vec3F(0xA8, &p.Velocity)
		p.Range = r.f32(0x89)
	case *dis.DetonationPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.FiringEntityID)
		r.entityID(0xA2, &p.TargetEntityID)
		r.entityID(0xA3, &p.MunitionID)
		r.eventID(0xA4, &p.EventID)
		r.vec3F(0xA5, &p.Velocity)
		r.vec3D(0xA6, &p.Location)
		r.burst(0xA7, &p.Burst)
		r.vec3F(0xA8, &p.LocationInEntity)
		p.DetonationResult = r.u8(0x89)
		p.ArticulationParameters = r.articulations(0xAA, p.ArticulationParameters)
	case *dis.CollisionPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.IssuingEntityID)
		r.entityID(0xA2, &p.CollidingEntityID)
		r.eventID(0xA3, &p.EventID)
		p.CollisionType = r.u8(0x84)
		r.vec3F(0xA5, &p.Velocity)
		p.Mass = r.f32(0x86)
		r.vec3F(0xA7, &p.Location)
	case *dis.ServiceRequestPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.RequestingEntityID)
		r.entityID(0xA2, &p.ServicingEntityID)
		p.ServiceType = r.u8(0x83)
		p.Supplies = r.supplies(0xA4, p.Supplies)
	case *dis.ResupplyOfferPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.ReceivingEntityID)
		r.entityID(0xA2, &p.SupplyingEntityID)
		p.Supplies = r.supplies(0xA3, p.Supplies)
	case *dis.ResupplyReceivedPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.ReceivingEntityID)
		r.entityID(0xA2, &p.SupplyingEntityID)
		p.Supplies = r.supplies(0xA3, p.Supplies)
	case *dis.ResupplyCancelPDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.ReceivingEntityID)
		r.entityID(0xA2, &p.SupplyingEntityID)
	case *dis.RepairCompletePDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.ReceivingEntityID)
		r.entityID(0xA2, &p.RepairingEntityID)
		p.Repair = r.u16(0x83)
	case *dis.RepairResponsePDU:
		h = &p.Header
		r.header(h, &s.header[t])
		r.entityID(0xA1, &p.ReceivingEntityID)
		r.entityID(0xA2, &p.RepairingEntityID)
		p.RepairResult = r.u8(0x83)
	default:
		return nil
	}
	r.eoc() // the alternative's end
	// the header's length field against the native size (CheckHeader; the
	// type is the prefix's)
	if !r.ok || r.pos != len(b) || int(h.Length) != p.Len() {
		return nil
	}
	return p
}

// fastReader is the cursor of match. ok turns false at the first octet
// berWriter would not have written there and stays false; pos then jumps to
// the end so that every later read fails at once. Every read is bounds
// checked, so garbage after a mismatch is harmless.
type fastReader struct {
	b   []byte
	pos int
	ok  bool
}

func (r *fastReader) fail() { r.ok, r.pos = false, len(r.b) }

// prim reads a primitive component's tag and short-form length and returns
// its contents.
func (r *fastReader) prim(tag byte) []byte {
	p := r.pos
	if p+1 < len(r.b) && r.b[p] == tag {
		if n := int(r.b[p+1]); n < 0x80 && p+2+n <= len(r.b) {
			r.pos = p + 2 + n
			return r.b[p+2 : p+2+n]
		}
	}
	r.fail()
	return nil
}

// begin reads a constructed component's tag and definite length (short,
// 81 or 82 form) and returns the offset where its contents end.
func (r *fastReader) begin(tag byte) int {
	p := r.pos
	if p+1 >= len(r.b) || r.b[p] != tag {
		r.fail()
		return -1
	}
	n, c := 0, r.b[p+1]
	switch {
	case c < 0x80:
		n, p = int(c), p+2
	case c == 0x81 && p+2 < len(r.b):
		n, p = int(r.b[p+2]), p+3
	case c == 0x82 && p+3 < len(r.b):
		n, p = int(r.b[p+2])<<8|int(r.b[p+3]), p+4
	default:
		r.fail()
		return -1
	}
	if p+n > len(r.b) {
		r.fail()
		return -1
	}
	r.pos = p
	return p + n
}

// end checks that the component begun at end's begin ended there.
func (r *fastReader) end(end int) {
	if r.pos != end {
		r.fail()
	}
}

// eoc reads the end-of-contents octets of an indefinite length.
func (r *fastReader) eoc() {
	if r.pos+2 > len(r.b) || r.b[r.pos] != 0 || r.b[r.pos+1] != 0 {
		r.fail()
		return
	}
	r.pos += 2
}

// uint reads a non-negative INTEGER of 1..5 contents octets up to max.
func (r *fastReader) uint(tag byte, max uint64) uint64 {
	c := r.prim(tag)
	if len(c) < 1 || len(c) > 5 || c[0]&0x80 != 0 {
		r.fail()
		return 0
	}
	var v uint64
	for _, x := range c {
		v = v<<8 | uint64(x)
	}
	if v > max {
		r.fail()
	}
	return v
}

func (r *fastReader) u8(tag byte) uint8   { return uint8(r.uint(tag, math.MaxUint8)) }
func (r *fastReader) u16(tag byte) uint16 { return uint16(r.uint(tag, math.MaxUint16)) }
func (r *fastReader) u32(tag byte) uint32 { return uint32(r.uint(tag, math.MaxUint32)) }

// real reads a REAL: +0 (no contents), the special values, or binary base
// 2, F = 0, an exponent of one or two octets and a mantissa below 2^53 (in
// up to 7 octets). Other encodings (decimal, base 8 or 16, a scale factor)
// are valid BER the general parse reads.
func (r *fastReader) real(tag byte) float64 {
	c := r.prim(tag)
	switch len(c) {
	case 0:
		return 0 // +0 (or a mismatch: ok is false then)
	case 1:
		switch c[0] {
		case 0x40:
			return math.Inf(1)
		case 0x41:
			return math.Inf(-1)
		case 0x42:
			return math.NaN()
		case 0x43:
			return math.Copysign(0, -1)
		}
		r.fail()
		return 0
	}
	if c[0]&0xBC != 0x80 || c[0]&3 > 1 {
		r.fail()
		return 0
	}
	en := int(c[0]&3) + 1
	if len(c) < 2+en || len(c)-1-en > 7 {
		r.fail()
		return 0
	}
	e := int(int8(c[1]))
	if en == 2 {
		e = int(int16(uint16(c[1])<<8 | uint16(c[2])))
	}
	var m uint64
	for _, x := range c[1+en:] {
		m = m<<8 | uint64(x)
	}
	if m == 0 || m >= 1<<53 {
		r.fail()
		return 0
	}
	return ldexp(m, e, c[0]&0x40 != 0)
}

// ldexp is ±m * 2^e for 0 < m < 2^53, as -math.Ldexp(float64(m), e) would
// give it, built from the bits when the result is a normal float64.
func ldexp(m uint64, e int, neg bool) float64 {
	l := mbits.Len64(m)
	x := e + l - 1 // the exponent of m's leading bit
	if x < -1022 || x > 1023 {
		f := math.Ldexp(float64(m), e) // subnormal, or an infinity
		if neg {
			f = -f
		}
		return f
	}
	b := uint64(x+1023)<<52 | m<<(53-l)&(1<<52-1)
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b)
}

func (r *fastReader) f32(tag byte) float32 { return float32(r.real(tag)) }
func (r *fastReader) f64(tag byte) float64 { return r.real(tag) }

// octets reads an OCTET STRING of exactly len(dst) octets into dst.
func (r *fastReader) octets(tag byte, dst []byte) {
	c := r.prim(tag)
	if len(c) != len(dst) {
		r.fail()
		return
	}
	copy(dst, c)
}

// header reads the components after the prefix's four values, which come
// from pre, and the header's end.
func (r *fastReader) header(h, pre *dis.Header) {
	*h = *pre
	h.Timestamp = r.u32(0x84)
	h.Length = r.u16(0x85)
	r.eoc()
}

func (r *fastReader) entityID(tag byte, v *dis.EntityID) {
	e := r.begin(tag)
	v.Site = r.u16(0x80)
	v.Application = r.u16(0x81)
	v.Entity = r.u16(0x82)
	r.end(e)
}

func (r *fastReader) eventID(tag byte, v *dis.EventID) {
	e := r.begin(tag)
	v.Site = r.u16(0x80)
	v.Application = r.u16(0x81)
	v.EventNumber = r.u16(0x82)
	r.end(e)
}

func (r *fastReader) entityType(tag byte, v *dis.EntityType) {
	e := r.begin(tag)
	v.Kind = r.u8(0x80)
	v.Domain = r.u8(0x81)
	v.Country = r.u16(0x82)
	v.Category = r.u8(0x83)
	v.Subcategory = r.u8(0x84)
	v.Specific = r.u8(0x85)
	v.Extra = r.u8(0x86)
	r.end(e)
}

func (r *fastReader) vec3F(tag byte, v *dis.Vector3Float) {
	e := r.begin(tag)
	v.X = r.f32(0x80)
	v.Y = r.f32(0x81)
	v.Z = r.f32(0x82)
	r.end(e)
}

func (r *fastReader) vec3D(tag byte, v *dis.Vector3Double) {
	e := r.begin(tag)
	v.X = r.f64(0x80)
	v.Y = r.f64(0x81)
	v.Z = r.f64(0x82)
	r.end(e)
}

func (r *fastReader) burst(tag byte, v *dis.BurstDescriptor) {
	e := r.begin(tag)
	r.entityType(0xA0, &v.Munition)
	v.Warhead = r.u16(0x81)
	v.Fuse = r.u16(0x82)
	v.Quantity = r.u16(0x83)
	v.Rate = r.u16(0x84)
	r.end(e)
}

// records counts the elements (SEQUENCE, short length) of the SEQUENCE OF
// whose tag is at pos, without moving; -1 (and ok false) when they do not
// fill it or exceed dis.MaxRecords.
func (r *fastReader) records() int {
	p := r.pos + 1
	if p >= len(r.b) {
		r.fail()
		return -1
	}
	end := 0
	switch c := r.b[p]; {
	case c < 0x80:
		end, p = p+1+int(c), p+1
	case c == 0x81 && p+1 < len(r.b):
		end, p = p+2+int(r.b[p+1]), p+2
	case c == 0x82 && p+2 < len(r.b):
		end, p = p+3+(int(r.b[p+1])<<8|int(r.b[p+2])), p+3
	default:
		r.fail()
		return -1
	}
	n := 0
	for p < end && p+1 < len(r.b) && r.b[p] == 0x30 && r.b[p+1] < 0x80 {
		p += 2 + int(r.b[p+1])
		n++
	}
	if p != end || n > dis.MaxRecords {
		r.fail()
		return -1
	}
	return n
}

func (r *fastReader) articulations(tag byte, ap []dis.ArticulationParameter) []dis.ArticulationParameter {
	n := r.records()
	if n < 0 {
		return ap
	}
	ap = resize(ap, n)
	e := r.begin(tag)
	for i := range ap {
		a := &ap[i]
		ee := r.begin(0x30)
		a.TypeDesignator = r.u8(0x80)
		a.ChangeIndicator = r.u8(0x81)
		a.PartAttachedTo = r.u16(0x82)
		a.ParameterType = r.u32(0x83)
		if c := r.prim(0x84); len(c) == 8 {
			a.Value = uint64(c[0])<<56 | uint64(c[1])<<48 | uint64(c[2])<<40 | uint64(c[3])<<32 |
				uint64(c[4])<<24 | uint64(c[5])<<16 | uint64(c[6])<<8 | uint64(c[7])
		} else {
			r.fail()
		}
		r.end(ee)
	}
	r.end(e)
	return ap
}

func (r *fastReader) supplies(tag byte, s []dis.SupplyQuantity) []dis.SupplyQuantity {
	n := r.records()
	if n < 0 {
		return s
	}
	s = resize(s, n)
	e := r.begin(tag)
	for i := range s {
		ee := r.begin(0x30)
		r.entityType(0xA0, &s[i].SupplyType)
		s[i].Quantity = r.f32(0x81)
		r.end(ee)
	}
	r.end(e)
	return s
}
