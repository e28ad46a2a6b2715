package aper

import fa "github.com/free5gc/aper"

// The DIS module (../asn1/DIS.asn) for free5gc/aper: one struct per ASN.1
// type, fields in component order, constraints in the tags. UInt8, UInt16
// and UInt32 are int64 with their value range; REAL is an OctetString
// tagged "real" (see doc.go); fixed-size OCTET STRINGs carry their size;
// SEQUENCE (SIZE (0..255)) OF is a slice.

// choiceUB is the DISPDU CHOICE's top-level parameter: ten alternatives,
// indexes 0..9.
const choiceUB = "valueUB:9"

type disPDU struct {
	Present          int // 1..10: the alternative, = dis.PDUType
	EntityState      *entityStatePDU
	Fire             *firePDU
	Detonation       *detonationPDU
	Collision        *collisionPDU
	ServiceRequest   *serviceRequestPDU
	ResupplyOffer    *resupplyPDU
	ResupplyReceived *resupplyPDU
	ResupplyCancel   *resupplyCancelPDU
	RepairComplete   *repairCompletePDU
	RepairResponse   *repairResponsePDU
}

type header struct {
	ProtocolVersion int64 `aper:"valueLB:0,valueUB:255"`
	ExerciseID      int64 `aper:"valueLB:0,valueUB:255"`
	PDUType         int64 `aper:"valueLB:0,valueUB:255"`
	ProtocolFamily  int64 `aper:"valueLB:0,valueUB:255"`
	Timestamp       int64 `aper:"valueLB:0,valueUB:4294967295"`
	Length          int64 `aper:"valueLB:0,valueUB:65535"`
}

type entityID struct { // EntityID and EventID
	Site        int64 `aper:"valueLB:0,valueUB:65535"`
	Application int64 `aper:"valueLB:0,valueUB:65535"`
	Number      int64 `aper:"valueLB:0,valueUB:65535"`
}

type entityType struct {
	Kind        int64 `aper:"valueLB:0,valueUB:255"`
	Domain      int64 `aper:"valueLB:0,valueUB:255"`
	Country     int64 `aper:"valueLB:0,valueUB:65535"`
	Category    int64 `aper:"valueLB:0,valueUB:255"`
	Subcategory int64 `aper:"valueLB:0,valueUB:255"`
	Specific    int64 `aper:"valueLB:0,valueUB:255"`
	Extra       int64 `aper:"valueLB:0,valueUB:255"`
}

type vector3 struct { // Vector3Float, Vector3Double and Orientation
	X fa.OctetString `aper:"real"`
	Y fa.OctetString `aper:"real"`
	Z fa.OctetString `aper:"real"`
}

type deadReckoning struct {
	Algorithm          int64          `aper:"valueLB:0,valueUB:255"`
	OtherParameters    fa.OctetString `aper:"sizeLB:15,sizeUB:15"`
	LinearAcceleration vector3
	AngularVelocity    vector3
}

type marking struct {
	CharacterSet int64          `aper:"valueLB:0,valueUB:255"`
	Characters   fa.OctetString `aper:"sizeLB:11,sizeUB:11"`
}

type burstDescriptor struct {
	Munition entityType
	Warhead  int64 `aper:"valueLB:0,valueUB:65535"`
	Fuse     int64 `aper:"valueLB:0,valueUB:65535"`
	Quantity int64 `aper:"valueLB:0,valueUB:65535"`
	Rate     int64 `aper:"valueLB:0,valueUB:65535"`
}

type articulationParameter struct {
	TypeDesignator  int64          `aper:"valueLB:0,valueUB:255"`
	ChangeIndicator int64          `aper:"valueLB:0,valueUB:255"`
	PartAttachedTo  int64          `aper:"valueLB:0,valueUB:65535"`
	ParameterType   int64          `aper:"valueLB:0,valueUB:4294967295"`
	ParameterValue  fa.OctetString `aper:"sizeLB:8,sizeUB:8"`
}

type supplyQuantity struct {
	SupplyType entityType
	Quantity   fa.OctetString `aper:"real"`
}

type entityStatePDU struct {
	Header                 header
	EntityID               entityID
	ForceID                int64 `aper:"valueLB:0,valueUB:255"`
	EntityType             entityType
	AlternativeEntityType  entityType
	LinearVelocity         vector3
	Location               vector3
	Orientation            vector3
	Appearance             int64 `aper:"valueLB:0,valueUB:4294967295"`
	DeadReckoning          deadReckoning
	Marking                marking
	Capabilities           int64                   `aper:"valueLB:0,valueUB:4294967295"`
	ArticulationParameters []articulationParameter `aper:"sizeLB:0,sizeUB:255"`
}

type firePDU struct {
	Header           header
	FiringEntityID   entityID
	TargetEntityID   entityID
	MunitionID       entityID
	EventID          entityID
	FireMissionIndex int64 `aper:"valueLB:0,valueUB:4294967295"`
	Location         vector3
	Burst            burstDescriptor
	Velocity         vector3
	Range            fa.OctetString `aper:"real"`
}

type detonationPDU struct {
	Header                 header
	FiringEntityID         entityID
	TargetEntityID         entityID
	MunitionID             entityID
	EventID                entityID
	Velocity               vector3
	Location               vector3
	Burst                  burstDescriptor
	LocationInEntity       vector3
	DetonationResult       int64                   `aper:"valueLB:0,valueUB:255"`
	ArticulationParameters []articulationParameter `aper:"sizeLB:0,sizeUB:255"`
}

type collisionPDU struct {
	Header            header
	IssuingEntityID   entityID
	CollidingEntityID entityID
	EventID           entityID
	CollisionType     int64 `aper:"valueLB:0,valueUB:255"`
	Velocity          vector3
	Mass              fa.OctetString `aper:"real"`
	Location          vector3
}

type serviceRequestPDU struct {
	Header             header
	RequestingEntityID entityID
	ServicingEntityID  entityID
	ServiceType        int64            `aper:"valueLB:0,valueUB:255"`
	Supplies           []supplyQuantity `aper:"sizeLB:0,sizeUB:255"`
}

type resupplyPDU struct { // ResupplyOfferPDU and ResupplyReceivedPDU
	Header            header
	ReceivingEntityID entityID
	SupplyingEntityID entityID
	Supplies          []supplyQuantity `aper:"sizeLB:0,sizeUB:255"`
}

type resupplyCancelPDU struct {
	Header            header
	ReceivingEntityID entityID
	SupplyingEntityID entityID
}

type repairCompletePDU struct {
	Header            header
	ReceivingEntityID entityID
	RepairingEntityID entityID
	Repair            int64 `aper:"valueLB:0,valueUB:65535"`
}

type repairResponsePDU struct {
	Header            header
	ReceivingEntityID entityID
	RepairingEntityID entityID
	RepairResult      int64 `aper:"valueLB:0,valueUB:255"`
}
