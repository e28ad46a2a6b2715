package syntax

import (
	"encoding/binary"

	"protolab/agents/dis"
)

// Archive visits the values of a PDU in the ASN.1 module's component order
// (asn1/DIS.asn). Walk drives it; an encoding archive reads the pointed-to
// values, a decoding one writes them. Decoders keep their first error and
// return it from Err; the walk does not stop early.
type Archive interface {
	Decoding() bool
	// Alt is the DISPDU CHOICE: encoding passes t, decoding returns the
	// type read (0 on error).
	Alt(t dis.PDUType) dis.PDUType
	Begin() // a constructed component (SEQUENCE) starts
	End()   // and ends
	U8(*uint8)
	U16(*uint16)
	U32(*uint32)
	F32(*float32)    // REAL
	F64(*float64)    // REAL
	Octets([]byte)   // OCTET STRING of exactly len bytes
	Records(int) int // SEQUENCE OF: encoding passes the count, decoding returns it
	Err() error
}

// Walk visits p's values after the CHOICE alternative.
func Walk(a Archive, p dis.PDU) {
	t, n := p.Type(), p.Len()
	switch p := p.(type) {
	case *dis.EntityStatePDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.EntityID)
		a.U8(&p.ForceID)
		entityType(a, &p.EntityType)
		entityType(a, &p.AlternativeEntityType)
		vec3F(a, &p.LinearVelocity)
		vec3D(a, &p.Location)
		a.Begin()
		a.F32(&p.Orientation.Psi)
		a.F32(&p.Orientation.Theta)
		a.F32(&p.Orientation.Phi)
		a.End()
		a.U32(&p.Appearance)
		a.Begin()
		a.U8(&p.DeadReckoning.Algorithm)
		a.Octets(p.DeadReckoning.OtherParameters[:])
		vec3F(a, &p.DeadReckoning.LinearAcceleration)
		vec3F(a, &p.DeadReckoning.AngularVelocity)
		a.End()
		a.Begin()
		a.U8(&p.Marking.CharacterSet)
		a.Octets(p.Marking.Characters[:])
		a.End()
		a.U32(&p.Capabilities)
		p.ArticulationParameters = articulations(a, p.ArticulationParameters)
	case *dis.FirePDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.FiringEntityID)
		entityID(a, &p.TargetEntityID)
		entityID(a, &p.MunitionID)
		eventID(a, &p.EventID)
		a.U32(&p.FireMissionIndex)
		vec3D(a, &p.Location)
		burst(a, &p.Burst)
		vec3F(a, &p.Velocity)
		a.F32(&p.Range)
	case *dis.DetonationPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.FiringEntityID)
		entityID(a, &p.TargetEntityID)
		entityID(a, &p.MunitionID)
		eventID(a, &p.EventID)
		vec3F(a, &p.Velocity)
		vec3D(a, &p.Location)
		burst(a, &p.Burst)
		vec3F(a, &p.LocationInEntity)
		a.U8(&p.DetonationResult)
		p.ArticulationParameters = articulations(a, p.ArticulationParameters)
	case *dis.CollisionPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.IssuingEntityID)
		entityID(a, &p.CollidingEntityID)
		eventID(a, &p.EventID)
		a.U8(&p.CollisionType)
		vec3F(a, &p.Velocity)
		a.F32(&p.Mass)
		vec3F(a, &p.Location)
	case *dis.ServiceRequestPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.RequestingEntityID)
		entityID(a, &p.ServicingEntityID)
		a.U8(&p.ServiceType)
		p.Supplies = supplies(a, p.Supplies)
	case *dis.ResupplyOfferPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.ReceivingEntityID)
		entityID(a, &p.SupplyingEntityID)
		p.Supplies = supplies(a, p.Supplies)
	case *dis.ResupplyReceivedPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.ReceivingEntityID)
		entityID(a, &p.SupplyingEntityID)
		p.Supplies = supplies(a, p.Supplies)
	case *dis.ResupplyCancelPDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.ReceivingEntityID)
		entityID(a, &p.SupplyingEntityID)
	case *dis.RepairCompletePDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.ReceivingEntityID)
		entityID(a, &p.RepairingEntityID)
		a.U16(&p.Repair)
	case *dis.RepairResponsePDU:
		header(a, &p.Header, t, n)
		entityID(a, &p.ReceivingEntityID)
		entityID(a, &p.RepairingEntityID)
		a.U8(&p.RepairResult)
	}
}

// header: encoding writes type t and length n (as MarshalTo does), not the
// struct's PDUType and Length.
func header(a Archive, h *dis.Header, t dis.PDUType, n int) {
	pt, fam, ln := uint8(t), uint8(h.ProtocolFamily), uint16(n)
	a.Begin()
	a.U8(&h.ProtocolVersion)
	a.U8(&h.ExerciseID)
	a.U8(&pt)
	a.U8(&fam)
	a.U32(&h.Timestamp)
	a.U16(&ln)
	a.End()
	if a.Decoding() {
		h.PDUType, h.ProtocolFamily, h.Length = dis.PDUType(pt), dis.ProtocolFamily(fam), ln
	}
}

func entityID(a Archive, e *dis.EntityID) {
	a.Begin()
	a.U16(&e.Site)
	a.U16(&e.Application)
	a.U16(&e.Entity)
	a.End()
}

func eventID(a Archive, e *dis.EventID) {
	a.Begin()
	a.U16(&e.Site)
	a.U16(&e.Application)
	a.U16(&e.EventNumber)
	a.End()
}

func entityType(a Archive, t *dis.EntityType) {
	a.Begin()
	a.U8(&t.Kind)
	a.U8(&t.Domain)
	a.U16(&t.Country)
	a.U8(&t.Category)
	a.U8(&t.Subcategory)
	a.U8(&t.Specific)
	a.U8(&t.Extra)
	a.End()
}

func vec3F(a Archive, v *dis.Vector3Float) {
	a.Begin()
	a.F32(&v.X)
	a.F32(&v.Y)
	a.F32(&v.Z)
	a.End()
}

func vec3D(a Archive, v *dis.Vector3Double) {
	a.Begin()
	a.F64(&v.X)
	a.F64(&v.Y)
	a.F64(&v.Z)
	a.End()
}

func burst(a Archive, b *dis.BurstDescriptor) {
	a.Begin()
	entityType(a, &b.Munition)
	a.U16(&b.Warhead)
	a.U16(&b.Fuse)
	a.U16(&b.Quantity)
	a.U16(&b.Rate)
	a.End()
}

func articulations(a Archive, ap []dis.ArticulationParameter) []dis.ArticulationParameter {
	n := a.Records(len(ap))
	if a.Decoding() {
		ap = resize(ap, n)
	}
	a.Begin()
	for i := range ap {
		r := &ap[i]
		a.Begin()
		a.U8(&r.TypeDesignator)
		a.U8(&r.ChangeIndicator)
		a.U16(&r.PartAttachedTo)
		a.U32(&r.ParameterType)
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], r.Value)
		a.Octets(v[:])
		r.Value = binary.BigEndian.Uint64(v[:])
		a.End()
	}
	a.End()
	return ap
}

func supplies(a Archive, s []dis.SupplyQuantity) []dis.SupplyQuantity {
	n := a.Records(len(s))
	if a.Decoding() {
		s = resize(s, n)
	}
	a.Begin()
	for i := range s {
		a.Begin()
		entityType(a, &s[i].SupplyType)
		a.F32(&s[i].Quantity)
		a.End()
	}
	a.End()
	return s
}

func resize[T any](s []T, n int) []T {
	if n == 0 {
		return s[:0]
	}
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Composition is Table 2's count of one PDU: integers, reals and octet
// strings (leaf values of the ASN.1 module; record counts and padding are
// not values there). Records are counted as they occur in the PDU given.
type Composition struct {
	Integers, Reals, OctetStrings int
}

// Add adds o's counts to c.
func (c *Composition) Add(o Composition) {
	c.Integers += o.Integers
	c.Reals += o.Reals
	c.OctetStrings += o.OctetStrings
}

// Compose counts p's leaf values by walking it.
func Compose(p dis.PDU) Composition {
	var c counter
	Walk(&c, p)
	return c.Composition
}

type counter struct{ Composition }

func (c *counter) Decoding() bool                { return false }
func (c *counter) Alt(t dis.PDUType) dis.PDUType { return t }
func (c *counter) Begin()                        {}
func (c *counter) End()                          {}
func (c *counter) U8(*uint8)                     { c.Integers++ }
func (c *counter) U16(*uint16)                   { c.Integers++ }
func (c *counter) U32(*uint32)                   { c.Integers++ }
func (c *counter) F32(*float32)                  { c.Reals++ }
func (c *counter) F64(*float64)                  { c.Reals++ }
func (c *counter) Octets([]byte)                 { c.OctetStrings++ }
func (c *counter) Records(n int) int             { return n }
func (c *counter) Err() error                    { return nil }
