package dis

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Fixtures: one PDU of every type with every field set to a distinct
// non-zero value, and the header's PDUType/Length set to what Marshal
// writes, so that decode(encode(p)) must DeepEqual p.

func hdr(t PDUType, ts uint32, n int) Header {
	h := NewHeader(t, 7, ts)
	h.Length = uint16(n)
	return h
}

func sampleEntityState() *EntityStatePDU {
	p := &EntityStatePDU{
		EntityID:              EntityID{Site: 0x0101, Application: 0x0202, Entity: 0x0303},
		ForceID:               2,
		EntityType:            EntityType{Kind: 1, Domain: 2, Country: 225, Category: 3, Subcategory: 4, Specific: 5, Extra: 6},
		AlternativeEntityType: EntityType{Kind: 7, Domain: 8, Country: 222, Category: 9, Subcategory: 10, Specific: 11, Extra: 12},
		LinearVelocity:        Vector3Float{1.5, -2.25, 3.125},
		Location:              Vector3Double{-2707231.5, -4353689.25, 3781470.125},
		Orientation:           Orientation{0.5, -0.25, 1.75},
		Appearance:            0x11223344,
		DeadReckoning: DeadReckoning{
			Algorithm:          4,
			OtherParameters:    [15]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			LinearAcceleration: Vector3Float{0.125, 0.375, -9.75},
			AngularVelocity:    Vector3Float{0.0625, -0.03125, 0.015625},
		},
		Marking:      NewMarking("PROTOLAB-01"),
		Capabilities: 0x55667788,
		ArticulationParameters: []ArticulationParameter{
			{TypeDesignator: 0, ChangeIndicator: 3, PartAttachedTo: 0, ParameterType: 4107, Value: 0x3fc0000000000000}, // float32 1.5
			{TypeDesignator: 1, ChangeIndicator: 4, PartAttachedTo: 1, ParameterType: 896, Value: 0x0203004001020300},
		},
	}
	p.Header = hdr(TypeEntityState, 0x01020305, p.Len())
	return p
}

func sampleFire() *FirePDU {
	p := &FirePDU{
		FiringEntityID:   EntityID{11, 12, 13},
		TargetEntityID:   EntityID{14, 15, 16},
		MunitionID:       EntityID{17, 18, 19},
		EventID:          EventID{20, 21, 22},
		FireMissionIndex: 0xa0b0c0d0,
		Location:         Vector3Double{1000.5, 2000.25, 3000.125},
		Burst: BurstDescriptor{
			Munition: EntityType{Kind: 2, Domain: 9, Country: 225, Category: 2, Subcategory: 1, Specific: 3, Extra: 4},
			Warhead:  1000, Fuse: 2000, Quantity: 3, Rate: 600,
		},
		Velocity: Vector3Float{100.5, 200.25, -300.125},
		Range:    4500.5,
	}
	p.Header = hdr(TypeFire, 0x02020202, p.Len())
	return p
}

func sampleDetonation() *DetonationPDU {
	p := &DetonationPDU{
		FiringEntityID: EntityID{31, 32, 33},
		TargetEntityID: EntityID{34, 35, 36},
		MunitionID:     EntityID{37, 38, 39},
		EventID:        EventID{40, 41, 42},
		Velocity:       Vector3Float{-10.5, 20.25, -30.125},
		Location:       Vector3Double{-1.5e6, 2.25e6, -3.125e6},
		Burst: BurstDescriptor{
			Munition: EntityType{Kind: 2, Domain: 2, Country: 222, Category: 1, Subcategory: 2, Specific: 3, Extra: 5},
			Warhead:  5000, Fuse: 1100, Quantity: 1, Rate: 1,
		},
		LocationInEntity: Vector3Float{0.5, 1.5, 2.5},
		DetonationResult: 5,
		ArticulationParameters: []ArticulationParameter{
			{TypeDesignator: 0, ChangeIndicator: 9, PartAttachedTo: 2, ParameterType: 4108, Value: 0x4000000000000000}, // float64 2.0 and float32 2.0
		},
	}
	p.Header = hdr(TypeDetonation, 0x03030303, p.Len())
	return p
}

func sampleCollision() *CollisionPDU {
	p := &CollisionPDU{
		IssuingEntityID:   EntityID{51, 52, 53},
		CollidingEntityID: EntityID{54, 55, 56},
		EventID:           EventID{57, 58, 59},
		CollisionType:     1,
		Velocity:          Vector3Float{5.5, 6.5, 7.5},
		Mass:              61500.5,
		Location:          Vector3Float{-1.25, 2.75, -0.5},
	}
	p.Header = hdr(TypeCollision, 0x04040404, p.Len())
	return p
}

func sampleSupplies(base uint8, n int) []SupplyQuantity {
	s := make([]SupplyQuantity, n)
	for i := range s {
		b := base + uint8(i)*8
		s[i] = SupplyQuantity{
			SupplyType: EntityType{Kind: 9, Domain: b + 1, Country: uint16(b) + 200, Category: b + 2, Subcategory: b + 3, Specific: b + 4, Extra: b + 5},
			Quantity:   float32(b) + 0.5,
		}
	}
	return s
}

func sampleServiceRequest() *ServiceRequestPDU {
	p := &ServiceRequestPDU{
		RequestingEntityID: EntityID{61, 62, 63},
		ServicingEntityID:  EntityID{64, 65, 66},
		ServiceType:        2,
		Supplies:           sampleSupplies(10, 2),
	}
	p.Header = hdr(TypeServiceRequest, 0x05050505, p.Len())
	return p
}

func sampleResupplyOffer() *ResupplyOfferPDU {
	p := &ResupplyOfferPDU{
		ReceivingEntityID: EntityID{71, 72, 73},
		SupplyingEntityID: EntityID{74, 75, 76},
		Supplies:          sampleSupplies(40, 3),
	}
	p.Header = hdr(TypeResupplyOffer, 0x06060606, p.Len())
	return p
}

func sampleResupplyReceived() *ResupplyReceivedPDU {
	p := &ResupplyReceivedPDU{
		ReceivingEntityID: EntityID{81, 82, 83},
		SupplyingEntityID: EntityID{84, 85, 86},
		Supplies:          sampleSupplies(90, 1),
	}
	p.Header = hdr(TypeResupplyReceived, 0x07070707, p.Len())
	return p
}

func sampleResupplyCancel() *ResupplyCancelPDU {
	p := &ResupplyCancelPDU{
		ReceivingEntityID: EntityID{91, 92, 93},
		SupplyingEntityID: EntityID{94, 95, 96},
	}
	p.Header = hdr(TypeResupplyCancel, 0x08080808, p.Len())
	return p
}

func sampleRepairComplete() *RepairCompletePDU {
	p := &RepairCompletePDU{
		ReceivingEntityID: EntityID{101, 102, 103},
		RepairingEntityID: EntityID{104, 105, 106},
		Repair:            4000,
	}
	p.Header = hdr(TypeRepairComplete, 0x09090909, p.Len())
	return p
}

func sampleRepairResponse() *RepairResponsePDU {
	p := &RepairResponsePDU{
		ReceivingEntityID: EntityID{111, 112, 113},
		RepairingEntityID: EntityID{114, 115, 116},
		RepairResult:      1,
	}
	p.Header = hdr(TypeRepairResponse, 0x0a0a0a0a, p.Len())
	return p
}

// samples returns one PDU of every type, in type order.
func samples() []PDU {
	return []PDU{
		sampleEntityState(), sampleFire(), sampleDetonation(), sampleCollision(),
		sampleServiceRequest(), sampleResupplyOffer(), sampleResupplyReceived(),
		sampleResupplyCancel(), sampleRepairComplete(), sampleRepairResponse(),
	}
}

func mustMarshal(t testing.TB, p PDU) []byte {
	t.Helper()
	b, err := Marshal(p)
	if err != nil {
		t.Fatalf("Marshal(%v): %v", p.Type(), err)
	}
	return b
}

// unhex decodes hex with whitespace and "|" separators allowed.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

// paddingRanges lists, per type, the byte ranges [from, to) that decoding
// ignores and encoding zeroes. It is written from the layouts in the
// standard, independently of the implementation.
var paddingRanges = map[PDUType][][2]int{
	TypeEntityState:      {{10, 12}},
	TypeFire:             {{10, 12}},
	TypeDetonation:       {{10, 12}, {102, 104}},
	TypeCollision:        {{10, 12}, {31, 32}},
	TypeServiceRequest:   {{10, 12}, {26, 28}},
	TypeResupplyOffer:    {{10, 12}, {25, 28}},
	TypeResupplyReceived: {{10, 12}, {25, 28}},
	TypeResupplyCancel:   {{10, 12}},
	TypeRepairComplete:   {{10, 12}, {26, 28}},
	TypeRepairResponse:   {{10, 12}, {25, 28}},
}

// zeroPadding returns a copy of the encoded PDU b with its padding zeroed.
func zeroPadding(t PDUType, b []byte) []byte {
	c := append([]byte(nil), b...)
	for _, r := range paddingRanges[t] {
		for i := r[0]; i < r[1] && i < len(c); i++ {
			c[i] = 0
		}
	}
	return c
}
