package dis

import (
	"encoding/binary"
	"math"
)

var be = binary.BigEndian

// EntityID identifies a simulated entity: site, application, entity (6 bytes).
type EntityID struct {
	Site        uint16
	Application uint16
	Entity      uint16
}

// EventID identifies an event (a fire, a collision, ...): site,
// application, event number (6 bytes).
type EventID struct {
	Site        uint16
	Application uint16
	EventNumber uint16
}

// EntityType is the 8-byte entity type record: kind, domain, country
// (16 bits), category, subcategory, specific, extra. It is also the munition
// type of a burst descriptor and the supply type of a supply quantity.
type EntityType struct {
	Kind        uint8
	Domain      uint8
	Country     uint16
	Category    uint8
	Subcategory uint8
	Specific    uint8
	Extra       uint8
}

// Vector3Float is three float32 (12 bytes): velocities, accelerations and
// entity-relative locations.
type Vector3Float struct {
	X, Y, Z float32
}

// Vector3Double is three float64 (24 bytes): world coordinates
// (geocentric, metres).
type Vector3Double struct {
	X, Y, Z float64
}

// Orientation is the Euler angles psi, theta, phi in radians (12 bytes).
type Orientation struct {
	Psi, Theta, Phi float32
}

// DeadReckoning is the 40-byte dead reckoning parameters record: algorithm,
// 15 bytes of algorithm-specific parameters (kept verbatim), linear
// acceleration and angular velocity.
type DeadReckoning struct {
	Algorithm          uint8
	OtherParameters    [15]byte
	LinearAcceleration Vector3Float
	AngularVelocity    Vector3Float
}

// Marking is the 12-byte entity marking: a character set (1 = ASCII) and 11
// characters, unused ones zero. Characters are kept verbatim.
type Marking struct {
	CharacterSet uint8
	Characters   [11]byte
}

// NewMarking returns an ASCII (character set 1) marking holding s,
// truncated to 11 bytes.
func NewMarking(s string) Marking {
	m := Marking{CharacterSet: 1}
	copy(m.Characters[:], s)
	return m
}

// String returns the characters up to the first zero byte.
func (m Marking) String() string {
	n := 0
	for n < len(m.Characters) && m.Characters[n] != 0 {
		n++
	}
	return string(m.Characters[:n])
}

// BurstDescriptor describes a munition burst (16 bytes): munition type,
// warhead, fuse, quantity, rate.
type BurstDescriptor struct {
	Munition EntityType
	Warhead  uint16
	Fuse     uint16
	Quantity uint16
	Rate     uint16
}

// ArticulationParameter is the 16-byte articulation parameter record:
// type designator (0 articulated part, 1 attached part), change indicator,
// ID of the part attached to, parameter type, and 64 bits of parameter
// value. The value is kept as raw bits so that every encoding round-trips
// exactly. Its readings differ between implementations: Open-DIS v6 reads
// an articulated part's value as a float64 (Float64/SetFloat64), Wireshark
// and IEEE 1278.1a/DIS 7 as a float32 in the first four bytes followed by
// four bytes of padding (Float32/SetFloat32); an attached part's value is
// an entity type (AttachedEntityType).
type ArticulationParameter struct {
	TypeDesignator  uint8
	ChangeIndicator uint8
	PartAttachedTo  uint16
	ParameterType   uint32
	Value           uint64
}

// Float64 returns the parameter value as a float64.
func (a ArticulationParameter) Float64() float64 { return math.Float64frombits(a.Value) }

// SetFloat64 sets the parameter value to the float64 v.
func (a *ArticulationParameter) SetFloat64(v float64) { a.Value = math.Float64bits(v) }

// Float32 returns the first four bytes of the parameter value as a float32.
func (a ArticulationParameter) Float32() float32 { return math.Float32frombits(uint32(a.Value >> 32)) }

// SetFloat32 sets the parameter value to the float32 v followed by four
// zero bytes.
func (a *ArticulationParameter) SetFloat32(v float32) { a.Value = uint64(math.Float32bits(v)) << 32 }

// AttachedEntityType returns the parameter value read as an entity type
// (the meaning for an attached part, type designator 1).
func (a ArticulationParameter) AttachedEntityType() EntityType {
	var b [8]byte
	be.PutUint64(b[:], a.Value)
	return getEntityType(b[:])
}

// SetAttachedEntityType sets the parameter value to the entity type t.
func (a *ArticulationParameter) SetAttachedEntityType(t EntityType) {
	var b [8]byte
	putEntityType(b[:], t)
	a.Value = be.Uint64(b[:])
}

// SupplyQuantity is a supply type and a quantity (12 bytes): the record of
// the Service Request, Resupply Offer and Resupply Received PDUs.
//
// IEEE 1278.1 gives the quantity 32 bits (a float); some Open-DIS v6
// releases wrongly marshal it as a single byte (a 9-byte record). This
// package follows the standard, as Wireshark does.
type SupplyQuantity struct {
	SupplyType EntityType
	Quantity   float32
}

// The put/get helpers below take a slice that is at least the record's
// size; callers check lengths once per PDU.

func putEntityID(b []byte, e EntityID) {
	_ = b[5]
	be.PutUint16(b[0:], e.Site)
	be.PutUint16(b[2:], e.Application)
	be.PutUint16(b[4:], e.Entity)
}

func getEntityID(b []byte) EntityID {
	_ = b[5]
	return EntityID{be.Uint16(b[0:]), be.Uint16(b[2:]), be.Uint16(b[4:])}
}

func putEventID(b []byte, e EventID) {
	_ = b[5]
	be.PutUint16(b[0:], e.Site)
	be.PutUint16(b[2:], e.Application)
	be.PutUint16(b[4:], e.EventNumber)
}

func getEventID(b []byte) EventID {
	_ = b[5]
	return EventID{be.Uint16(b[0:]), be.Uint16(b[2:]), be.Uint16(b[4:])}
}

func putEntityType(b []byte, t EntityType) {
	_ = b[7]
	b[0] = t.Kind
	b[1] = t.Domain
	be.PutUint16(b[2:], t.Country)
	b[4] = t.Category
	b[5] = t.Subcategory
	b[6] = t.Specific
	b[7] = t.Extra
}

func getEntityType(b []byte) EntityType {
	_ = b[7]
	return EntityType{
		Kind: b[0], Domain: b[1], Country: be.Uint16(b[2:]),
		Category: b[4], Subcategory: b[5], Specific: b[6], Extra: b[7],
	}
}

func putF32(b []byte, v float32) { be.PutUint32(b, math.Float32bits(v)) }
func getF32(b []byte) float32    { return math.Float32frombits(be.Uint32(b)) }
func putF64(b []byte, v float64) { be.PutUint64(b, math.Float64bits(v)) }
func getF64(b []byte) float64    { return math.Float64frombits(be.Uint64(b)) }

func putVec3F(b []byte, v Vector3Float) {
	_ = b[11]
	putF32(b[0:], v.X)
	putF32(b[4:], v.Y)
	putF32(b[8:], v.Z)
}

func getVec3F(b []byte) Vector3Float {
	_ = b[11]
	return Vector3Float{getF32(b[0:]), getF32(b[4:]), getF32(b[8:])}
}

func putVec3D(b []byte, v Vector3Double) {
	_ = b[23]
	putF64(b[0:], v.X)
	putF64(b[8:], v.Y)
	putF64(b[16:], v.Z)
}

func getVec3D(b []byte) Vector3Double {
	_ = b[23]
	return Vector3Double{getF64(b[0:]), getF64(b[8:]), getF64(b[16:])}
}

func putOrientation(b []byte, o Orientation) {
	_ = b[11]
	putF32(b[0:], o.Psi)
	putF32(b[4:], o.Theta)
	putF32(b[8:], o.Phi)
}

func getOrientation(b []byte) Orientation {
	_ = b[11]
	return Orientation{getF32(b[0:]), getF32(b[4:]), getF32(b[8:])}
}

func putDeadReckoning(b []byte, d *DeadReckoning) {
	_ = b[39]
	b[0] = d.Algorithm
	copy(b[1:16], d.OtherParameters[:])
	putVec3F(b[16:], d.LinearAcceleration)
	putVec3F(b[28:], d.AngularVelocity)
}

func getDeadReckoning(b []byte, d *DeadReckoning) {
	_ = b[39]
	d.Algorithm = b[0]
	copy(d.OtherParameters[:], b[1:16])
	d.LinearAcceleration = getVec3F(b[16:])
	d.AngularVelocity = getVec3F(b[28:])
}

func putMarking(b []byte, m *Marking) {
	_ = b[11]
	b[0] = m.CharacterSet
	copy(b[1:12], m.Characters[:])
}

func getMarking(b []byte, m *Marking) {
	_ = b[11]
	m.CharacterSet = b[0]
	copy(m.Characters[:], b[1:12])
}

func putBurst(b []byte, d BurstDescriptor) {
	_ = b[15]
	putEntityType(b, d.Munition)
	be.PutUint16(b[8:], d.Warhead)
	be.PutUint16(b[10:], d.Fuse)
	be.PutUint16(b[12:], d.Quantity)
	be.PutUint16(b[14:], d.Rate)
}

func getBurst(b []byte) BurstDescriptor {
	_ = b[15]
	return BurstDescriptor{
		Munition: getEntityType(b),
		Warhead:  be.Uint16(b[8:]), Fuse: be.Uint16(b[10:]),
		Quantity: be.Uint16(b[12:]), Rate: be.Uint16(b[14:]),
	}
}

func putArticulation(b []byte, a *ArticulationParameter) {
	_ = b[15]
	b[0] = a.TypeDesignator
	b[1] = a.ChangeIndicator
	be.PutUint16(b[2:], a.PartAttachedTo)
	be.PutUint32(b[4:], a.ParameterType)
	be.PutUint64(b[8:], a.Value)
}

func getArticulation(b []byte) ArticulationParameter {
	_ = b[15]
	return ArticulationParameter{
		TypeDesignator: b[0], ChangeIndicator: b[1],
		PartAttachedTo: be.Uint16(b[2:]), ParameterType: be.Uint32(b[4:]),
		Value: be.Uint64(b[8:]),
	}
}

func putSupply(b []byte, s SupplyQuantity) {
	_ = b[11]
	putEntityType(b, s.SupplyType)
	putF32(b[8:], s.Quantity)
}

func getSupply(b []byte) SupplyQuantity {
	_ = b[11]
	return SupplyQuantity{SupplyType: getEntityType(b), Quantity: getF32(b[8:])}
}

// putArticulations writes ap at b[0:] (b is exactly 16*len(ap) long).
func putArticulations(b []byte, ap []ArticulationParameter) {
	for i := range ap {
		putArticulation(b[i*ArticulationParameterSize:], &ap[i])
	}
}

// getArticulations decodes n records from b into dst[:0], reusing dst's
// storage when it is large enough.
func getArticulations(dst []ArticulationParameter, b []byte, n int) []ArticulationParameter {
	if n == 0 {
		return dst[:0]
	}
	if cap(dst) < n {
		dst = make([]ArticulationParameter, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = getArticulation(b[i*ArticulationParameterSize:])
	}
	return dst
}

func putSupplies(b []byte, s []SupplyQuantity) {
	for i := range s {
		putSupply(b[i*SupplyQuantitySize:], s[i])
	}
}

func getSupplies(dst []SupplyQuantity, b []byte, n int) []SupplyQuantity {
	if n == 0 {
		return dst[:0]
	}
	if cap(dst) < n {
		dst = make([]SupplyQuantity, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = getSupply(b[i*SupplyQuantitySize:])
	}
	return dst
}

func zero(b []byte) {
	for i := range b {
		b[i] = 0
	}
}
