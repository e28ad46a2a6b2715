package dis

import "strconv"

// ProtocolVersion is the value this package expects in, and its helpers put
// into, the header's protocol version field. 6 is IEEE 1278.1a-1998, the
// version the Open-DIS "dis6" code base emits; the ten PDU layouts here are
// those of IEEE 1278.1-1995 (version 5), which 1278.1a left unchanged.
// Decoding does not reject other versions: the field is kept as received.
const ProtocolVersion uint8 = 6

// Sizes in bytes. All multi-byte fields are big-endian.
const (
	// MaxPDUSize is the largest DIS PDU (IEEE 1278.1: 8192 bytes); receive
	// buffers should be this large. Decode rejects anything longer.
	MaxPDUSize = 8192

	HeaderSize                = 12
	EntityIDSize              = 6
	EventIDSize               = 6
	EntityTypeSize            = 8
	Vector3FloatSize          = 12
	Vector3DoubleSize         = 24
	OrientationSize           = 12
	DeadReckoningSize         = 40
	MarkingSize               = 12
	BurstDescriptorSize       = 16
	ArticulationParameterSize = 16
	SupplyQuantitySize        = 12

	// Fixed part of each PDU (the whole PDU when it has no records).
	EntityStateSize      = 144 // + 16 per articulation parameter
	FireSize             = 96
	DetonationSize       = 104 // + 16 per articulation parameter
	CollisionSize        = 60
	ServiceRequestSize   = 28 // + 12 per supply quantity
	ResupplyOfferSize    = 28 // + 12 per supply quantity
	ResupplyReceivedSize = 28 // + 12 per supply quantity
	ResupplyCancelSize   = 24
	RepairCompleteSize   = 28
	RepairResponseSize   = 28

	// MaxRecords is the most records of one kind a PDU can carry: the
	// count fields are 8 bits wide.
	MaxRecords = 255
)

// PDUType is the header's PDU type field.
type PDUType uint8

// The ten PDU types of Loper et al. (DIS 1278.1 numbering).
const (
	TypeEntityState      PDUType = 1
	TypeFire             PDUType = 2
	TypeDetonation       PDUType = 3
	TypeCollision        PDUType = 4
	TypeServiceRequest   PDUType = 5
	TypeResupplyOffer    PDUType = 6
	TypeResupplyReceived PDUType = 7
	TypeResupplyCancel   PDUType = 8
	TypeRepairComplete   PDUType = 9
	TypeRepairResponse   PDUType = 10
)

// Types lists the ten implemented PDU types in numeric order.
var Types = [...]PDUType{
	TypeEntityState, TypeFire, TypeDetonation, TypeCollision,
	TypeServiceRequest, TypeResupplyOffer, TypeResupplyReceived,
	TypeResupplyCancel, TypeRepairComplete, TypeRepairResponse,
}

var typeNames = [...]string{
	TypeEntityState:      "Entity State",
	TypeFire:             "Fire",
	TypeDetonation:       "Detonation",
	TypeCollision:        "Collision",
	TypeServiceRequest:   "Service Request",
	TypeResupplyOffer:    "Resupply Offer",
	TypeResupplyReceived: "Resupply Received",
	TypeResupplyCancel:   "Resupply Cancel",
	TypeRepairComplete:   "Repair Complete",
	TypeRepairResponse:   "Repair Response",
}

// Known reports whether t is one of the ten implemented types.
func (t PDUType) Known() bool { return t >= TypeEntityState && t <= TypeRepairResponse }

// String returns the standard's name ("Entity State"), or "PDU type N".
func (t PDUType) String() string {
	if t.Known() {
		return typeNames[t]
	}
	return "PDU type " + strconv.Itoa(int(t))
}

// Family returns the protocol family the standard assigns to t, or 0
// ("Other") for a type this package does not know.
func (t PDUType) Family() ProtocolFamily {
	switch t {
	case TypeEntityState, TypeCollision:
		return FamilyEntityInformation
	case TypeFire, TypeDetonation:
		return FamilyWarfare
	case TypeServiceRequest, TypeResupplyOffer, TypeResupplyReceived,
		TypeResupplyCancel, TypeRepairComplete, TypeRepairResponse:
		return FamilyLogistics
	}
	return 0
}

// FixedSize is the size of t's fixed part (its size with no records), or 0
// for an unknown type.
func (t PDUType) FixedSize() int {
	switch t {
	case TypeEntityState:
		return EntityStateSize
	case TypeFire:
		return FireSize
	case TypeDetonation:
		return DetonationSize
	case TypeCollision:
		return CollisionSize
	case TypeServiceRequest:
		return ServiceRequestSize
	case TypeResupplyOffer:
		return ResupplyOfferSize
	case TypeResupplyReceived:
		return ResupplyReceivedSize
	case TypeResupplyCancel:
		return ResupplyCancelSize
	case TypeRepairComplete:
		return RepairCompleteSize
	case TypeRepairResponse:
		return RepairResponseSize
	}
	return 0
}

// ProtocolFamily is the header's protocol family field.
type ProtocolFamily uint8

// Protocol families of the ten types.
const (
	FamilyEntityInformation ProtocolFamily = 1 // Entity Information/Interaction
	FamilyWarfare           ProtocolFamily = 2
	FamilyLogistics         ProtocolFamily = 3
)

// String returns the family's name.
func (f ProtocolFamily) String() string {
	switch f {
	case 0:
		return "Other"
	case FamilyEntityInformation:
		return "Entity Information/Interaction"
	case FamilyWarfare:
		return "Warfare"
	case FamilyLogistics:
		return "Logistics"
	}
	return "family " + strconv.Itoa(int(f))
}

// field names a top-level field of a PDU layout by its starting offset;
// a layout lists them in increasing offset order. It is used to name the
// field at which a truncated PDU ends.
type field struct {
	off  int
	name string
}

type layout []field

// at names the field that contains byte offset off.
func (l layout) at(off int) (string, int) {
	name, start := "", 0
	for _, f := range l {
		if f.off > off {
			break
		}
		name, start = f.name, f.off
	}
	return name, start
}

var headerLayout = layout{
	{0, "protocol version"}, {1, "exercise id"}, {2, "PDU type"},
	{3, "protocol family"}, {4, "timestamp"}, {8, "length"}, {10, "padding"},
}

func withHeader(rest ...field) layout {
	return append(append(layout{}, headerLayout...), rest...)
}
