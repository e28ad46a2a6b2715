package syntax

import "protolab/agents/dis"

// Samples returns one PDU of each of the ten types (dis.Types order) with
// distinct values in every field, zeros and negative reals among them, two
// articulation parameters and two supply quantities where the type has
// records, exercise 1, and the header's PDUType and Length set as Marshal
// writes them. Tests, benchmarks and the size table use them.
func Samples() []dis.PDU {
	h := func(t dis.PDUType, ts uint32, p dis.PDU) dis.Header {
		hd := dis.NewHeader(t, 1, ts)
		hd.Length = uint16(p.Len())
		return hd
	}
	mt := dis.EntityType{Kind: 2, Domain: 9, Country: 225, Category: 2, Subcategory: 1, Specific: 3, Extra: 4}
	sup := []dis.SupplyQuantity{
		{SupplyType: dis.EntityType{Kind: 5, Domain: 1, Country: 225, Category: 1}, Quantity: 250.5},
		{SupplyType: dis.EntityType{Kind: 5, Domain: 1, Country: 225, Category: 2, Specific: 1}, Quantity: 0},
	}
	art := []dis.ArticulationParameter{
		{TypeDesignator: 0, ChangeIndicator: 3, PartAttachedTo: 0, ParameterType: 4107, Value: 0x3fc0000000000000},
		{TypeDesignator: 1, ChangeIndicator: 4, PartAttachedTo: 1, ParameterType: 896, Value: 0x0203004001020300},
	}
	es := &dis.EntityStatePDU{
		EntityID:              dis.EntityID{Site: 1, Application: 2, Entity: 303},
		ForceID:               2,
		EntityType:            dis.EntityType{Kind: 1, Domain: 2, Country: 225, Category: 3, Subcategory: 4, Specific: 5, Extra: 6},
		AlternativeEntityType: dis.EntityType{Kind: 1, Domain: 2, Country: 222, Category: 9},
		LinearVelocity:        dis.Vector3Float{X: 12.5, Y: -2.25, Z: 0},
		Location:              dis.Vector3Double{X: -2707231.5396, Y: -4353689.25, Z: 3781470.125},
		Orientation:           dis.Orientation{Psi: 0.785398, Theta: -0.25, Phi: 0},
		Appearance:            0x00400000,
		DeadReckoning: dis.DeadReckoning{
			Algorithm:          4,
			LinearAcceleration: dis.Vector3Float{X: 0.125, Y: 0, Z: -9.81},
			AngularVelocity:    dis.Vector3Float{X: 0, Y: 0, Z: 0.0625},
		},
		Marking:                dis.NewMarking("PROTOLAB-01"),
		Capabilities:           0x0000000f,
		ArticulationParameters: art,
	}
	es.Header = h(dis.TypeEntityState, 0x7a3c9e11, es)
	fire := &dis.FirePDU{
		FiringEntityID: dis.EntityID{Site: 1, Application: 2, Entity: 303},
		TargetEntityID: dis.EntityID{Site: 1, Application: 3, Entity: 7},
		MunitionID:     dis.EntityID{Site: 1, Application: 2, Entity: 5001},
		EventID:        dis.EventID{Site: 1, Application: 2, EventNumber: 4242},
		Location:       dis.Vector3Double{X: 1000.5, Y: -2000.25, Z: 3000.125},
		Burst:          dis.BurstDescriptor{Munition: mt, Warhead: 1000, Fuse: 2000, Quantity: 3, Rate: 600},
		Velocity:       dis.Vector3Float{X: 100.5, Y: 200.25, Z: -300.125},
		Range:          4500.5,
	}
	fire.Header = h(dis.TypeFire, 0x7a3c9e13, fire)
	det := &dis.DetonationPDU{
		FiringEntityID:         fire.FiringEntityID,
		TargetEntityID:         fire.TargetEntityID,
		MunitionID:             fire.MunitionID,
		EventID:                fire.EventID,
		Velocity:               dis.Vector3Float{X: -50.5, Y: 0, Z: 9.75},
		Location:               dis.Vector3Double{X: 1005.5, Y: -2010.75, Z: 2990},
		Burst:                  fire.Burst,
		LocationInEntity:       dis.Vector3Float{X: 1.5, Y: -0.5, Z: 0.75},
		DetonationResult:       1,
		ArticulationParameters: art,
	}
	det.Header = h(dis.TypeDetonation, 0x7a3c9e15, det)
	col := &dis.CollisionPDU{
		IssuingEntityID:   dis.EntityID{Site: 1, Application: 2, Entity: 303},
		CollidingEntityID: dis.EntityID{Site: 1, Application: 3, Entity: 7},
		EventID:           dis.EventID{Site: 1, Application: 2, EventNumber: 77},
		CollisionType:     1,
		Velocity:          dis.Vector3Float{X: 3.5, Y: -1, Z: 0},
		Mass:              62000,
		Location:          dis.Vector3Float{X: 1.25, Y: 0.5, Z: -0.75},
	}
	col.Header = h(dis.TypeCollision, 0x7a3c9e17, col)
	sr := &dis.ServiceRequestPDU{
		RequestingEntityID: dis.EntityID{Site: 1, Application: 2, Entity: 303},
		ServicingEntityID:  dis.EntityID{Site: 1, Application: 2, Entity: 900},
		ServiceType:        1,
		Supplies:           sup,
	}
	sr.Header = h(dis.TypeServiceRequest, 0x7a3c9e19, sr)
	ro := &dis.ResupplyOfferPDU{
		ReceivingEntityID: dis.EntityID{Site: 1, Application: 2, Entity: 303},
		SupplyingEntityID: dis.EntityID{Site: 1, Application: 2, Entity: 900},
		Supplies:          sup,
	}
	ro.Header = h(dis.TypeResupplyOffer, 0x7a3c9e1b, ro)
	rr := &dis.ResupplyReceivedPDU{
		ReceivingEntityID: ro.ReceivingEntityID,
		SupplyingEntityID: ro.SupplyingEntityID,
		Supplies:          sup,
	}
	rr.Header = h(dis.TypeResupplyReceived, 0x7a3c9e1d, rr)
	rc := &dis.ResupplyCancelPDU{ReceivingEntityID: ro.ReceivingEntityID, SupplyingEntityID: ro.SupplyingEntityID}
	rc.Header = h(dis.TypeResupplyCancel, 0x7a3c9e1f, rc)
	rp := &dis.RepairCompletePDU{ReceivingEntityID: ro.ReceivingEntityID, RepairingEntityID: ro.SupplyingEntityID, Repair: 4000}
	rp.Header = h(dis.TypeRepairComplete, 0x7a3c9e21, rp)
	rs := &dis.RepairResponsePDU{ReceivingEntityID: ro.ReceivingEntityID, RepairingEntityID: ro.SupplyingEntityID, RepairResult: 1}
	rs.Header = h(dis.TypeRepairResponse, 0x7a3c9e23, rs)
	return []dis.PDU{es, fire, det, col, sr, ro, rr, rc, rp, rs}
}
