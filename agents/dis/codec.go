package dis

// PDU is implemented by the pointer types of the ten PDU structs
// (*EntityStatePDU, *FirePDU, ...).
type PDU interface {
	// Type is the PDU type written into, and expected in, the header.
	Type() PDUType
	// Len is the encoded size in bytes, records included.
	Len() int
	// MarshalTo encodes the PDU into b[:Len()] and returns Len(). It
	// fails with ErrShort if len(b) < Len(), and with ErrCount if a record
	// list is longer than 255. It writes every byte of b[:Len()] (padding
	// as zero), so b may be a reused dirty buffer, and does not allocate.
	MarshalTo(b []byte) (int, error)
	// UnmarshalBinary decodes a PDU of this type that is exactly b. It
	// does not keep b, reuses the receiver's record slices when large
	// enough, and leaves the receiver unchanged when it returns an error.
	UnmarshalBinary(b []byte) error
}

// Compile-time checks that all ten types implement PDU.
var (
	_ PDU = (*EntityStatePDU)(nil)
	_ PDU = (*FirePDU)(nil)
	_ PDU = (*DetonationPDU)(nil)
	_ PDU = (*CollisionPDU)(nil)
	_ PDU = (*ServiceRequestPDU)(nil)
	_ PDU = (*ResupplyOfferPDU)(nil)
	_ PDU = (*ResupplyReceivedPDU)(nil)
	_ PDU = (*ResupplyCancelPDU)(nil)
	_ PDU = (*RepairCompletePDU)(nil)
	_ PDU = (*RepairResponsePDU)(nil)
)

// New returns a new zero PDU of type t, or nil if t is not one of the ten
// implemented types.
func New(t PDUType) PDU {
	switch t {
	case TypeEntityState:
		return new(EntityStatePDU)
	case TypeFire:
		return new(FirePDU)
	case TypeDetonation:
		return new(DetonationPDU)
	case TypeCollision:
		return new(CollisionPDU)
	case TypeServiceRequest:
		return new(ServiceRequestPDU)
	case TypeResupplyOffer:
		return new(ResupplyOfferPDU)
	case TypeResupplyReceived:
		return new(ResupplyReceivedPDU)
	case TypeResupplyCancel:
		return new(ResupplyCancelPDU)
	case TypeRepairComplete:
		return new(RepairCompletePDU)
	case TypeRepairResponse:
		return new(RepairResponsePDU)
	}
	return nil
}

// Decode decodes the single PDU that b holds, dispatching on the header's
// PDU type, into a newly allocated struct. b must be exactly one PDU: the
// header's length field must equal len(b) (ErrShort if the PDU is
// truncated, ErrLength if bytes follow it; use PeekHeader to split a
// datagram that holds several). The result does not refer to b.
func Decode(b []byte) (PDU, error) {
	h, err := PeekHeader(b)
	if err != nil {
		return nil, err
	}
	p := New(h.PDUType)
	if p == nil {
		return nil, decodeErr(h.PDUType, "PDU type", 2, ErrUnknownType, "")
	}
	if err := p.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return p, nil
}

// Decoder decodes PDUs into structs it owns, one per type, so that a
// receive loop decodes without allocating once record slices have grown.
// The PDU returned by Decode is valid until the next call to Decode with
// the same PDU type. A Decoder is not safe for concurrent use; its zero
// value is ready to use.
type Decoder struct {
	entityState      EntityStatePDU
	fire             FirePDU
	detonation       DetonationPDU
	collision        CollisionPDU
	serviceRequest   ServiceRequestPDU
	resupplyOffer    ResupplyOfferPDU
	resupplyReceived ResupplyReceivedPDU
	resupplyCancel   ResupplyCancelPDU
	repairComplete   RepairCompletePDU
	repairResponse   RepairResponsePDU
}

// Decode is like the package-level Decode but reuses d's structs.
func (d *Decoder) Decode(b []byte) (PDU, error) {
	h, err := PeekHeader(b)
	if err != nil {
		return nil, err
	}
	var p PDU
	switch h.PDUType {
	case TypeEntityState:
		p = &d.entityState
	case TypeFire:
		p = &d.fire
	case TypeDetonation:
		p = &d.detonation
	case TypeCollision:
		p = &d.collision
	case TypeServiceRequest:
		p = &d.serviceRequest
	case TypeResupplyOffer:
		p = &d.resupplyOffer
	case TypeResupplyReceived:
		p = &d.resupplyReceived
	case TypeResupplyCancel:
		p = &d.resupplyCancel
	case TypeRepairComplete:
		p = &d.repairComplete
	case TypeRepairResponse:
		p = &d.repairResponse
	default:
		return nil, decodeErr(h.PDUType, "PDU type", 2, ErrUnknownType, "")
	}
	if err := p.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return p, nil
}

// Marshal encodes p into a new slice of exactly p.Len() bytes. The header's
// type and length fields are set from p.Type() and p.Len().
func Marshal(p PDU) ([]byte, error) {
	n := p.Len()
	if n > MaxPDUSize {
		return nil, encodeErr(p.Type(), "length", 8, ErrTooLarge,
			"PDU would be "+itoa(n)+" bytes, maximum is "+itoa(MaxPDUSize))
	}
	b := make([]byte, n)
	if _, err := p.MarshalTo(b); err != nil {
		return nil, err
	}
	return b, nil
}

// AppendMarshal appends the encoding of p to dst and returns the extended
// slice. It allocates only when dst lacks capacity. On error dst is
// returned unchanged.
func AppendMarshal(dst []byte, p PDU) ([]byte, error) {
	n := p.Len()
	if n > MaxPDUSize {
		return dst, encodeErr(p.Type(), "length", 8, ErrTooLarge,
			"PDU would be "+itoa(n)+" bytes, maximum is "+itoa(MaxPDUSize))
	}
	start := len(dst)
	out := grow(dst, n)
	if _, err := p.MarshalTo(out[start:]); err != nil {
		return dst, err
	}
	return out, nil
}

// grow returns dst extended by n bytes (contents of the new bytes
// unspecified).
func grow(dst []byte, n int) []byte {
	if need := len(dst) + n; need <= cap(dst) {
		return dst[:need]
	}
	out := make([]byte, len(dst)+n, 2*cap(dst)+n)
	copy(out, dst)
	return out
}

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *EntityStatePDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *FirePDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *DetonationPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *CollisionPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *ServiceRequestPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *ResupplyOfferPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *ResupplyReceivedPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *ResupplyCancelPDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *RepairCompletePDU) MarshalBinary() ([]byte, error) { return Marshal(p) }

// MarshalBinary implements encoding.BinaryMarshaler.
func (p *RepairResponsePDU) MarshalBinary() ([]byte, error) { return Marshal(p) }
