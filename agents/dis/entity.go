package dis

// EntityStatePDU (type 1, family Entity Information/Interaction) reports an
// entity's state. 144 bytes plus 16 per articulation parameter:
//
//	  0 header                        12
//	 12 entity id                      6
//	 18 force id                       1
//	 19 number of articulation params  1 (len(ArticulationParameters))
//	 20 entity type                    8
//	 28 alternative entity type        8
//	 36 linear velocity               12 (3 x float32)
//	 48 location (world coordinates)  24 (3 x float64)
//	 72 orientation                   12 (psi, theta, phi float32)
//	 84 appearance                     4
//	 88 dead reckoning parameters     40
//	128 marking                       12
//	140 capabilities                   4
//	144 articulation parameters       16 each
type EntityStatePDU struct {
	Header                 Header
	EntityID               EntityID
	ForceID                uint8
	EntityType             EntityType
	AlternativeEntityType  EntityType
	LinearVelocity         Vector3Float
	Location               Vector3Double
	Orientation            Orientation
	Appearance             uint32
	DeadReckoning          DeadReckoning
	Marking                Marking
	Capabilities           uint32
	ArticulationParameters []ArticulationParameter
}

var entityStateLayout = withHeader(
	field{12, "entity id"}, field{18, "force id"},
	field{19, "number of articulation parameters"},
	field{20, "entity type"}, field{28, "alternative entity type"},
	field{36, "linear velocity"}, field{48, "location"},
	field{72, "orientation"}, field{84, "appearance"},
	field{88, "dead reckoning parameters"}, field{128, "marking"},
	field{140, "capabilities"}, field{144, "articulation parameters"},
)

// Type returns TypeEntityState.
func (p *EntityStatePDU) Type() PDUType { return TypeEntityState }

// Len returns the encoded size: 144 + 16 * len(ArticulationParameters).
func (p *EntityStatePDU) Len() int {
	return EntityStateSize + len(p.ArticulationParameters)*ArticulationParameterSize
}

// MarshalTo encodes p into b[:p.Len()] and returns p.Len().
func (p *EntityStatePDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeEntityState, len(p.ArticulationParameters),
		ArticulationParameterSize, "number of articulation parameters", 19)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeEntityState, n)
	putEntityID(b[12:], p.EntityID)
	b[18] = p.ForceID
	b[19] = uint8(len(p.ArticulationParameters))
	putEntityType(b[20:], p.EntityType)
	putEntityType(b[28:], p.AlternativeEntityType)
	putVec3F(b[36:], p.LinearVelocity)
	putVec3D(b[48:], p.Location)
	putOrientation(b[72:], p.Orientation)
	be.PutUint32(b[84:], p.Appearance)
	putDeadReckoning(b[88:], &p.DeadReckoning)
	putMarking(b[128:], &p.Marking)
	be.PutUint32(b[140:], p.Capabilities)
	putArticulations(b[EntityStateSize:], p.ArticulationParameters)
	return n, nil
}

// UnmarshalBinary decodes one Entity State PDU that is exactly b. The
// ArticulationParameters slice is reused when its capacity suffices; p is
// left unchanged when an error is returned.
func (p *EntityStatePDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeEntityState, entityStateLayout); err != nil {
		return err
	}
	count := int(b[19])
	if err := checkCount(b, TypeEntityState, count, ArticulationParameterSize,
		"number of articulation parameters", 19, "articulation parameters"); err != nil {
		return err
	}
	_ = b[EntityStateSize-1]
	p.Header = getHeader(b)
	p.EntityID = getEntityID(b[12:])
	p.ForceID = b[18]
	p.EntityType = getEntityType(b[20:])
	p.AlternativeEntityType = getEntityType(b[28:])
	p.LinearVelocity = getVec3F(b[36:])
	p.Location = getVec3D(b[48:])
	p.Orientation = getOrientation(b[72:])
	p.Appearance = be.Uint32(b[84:])
	getDeadReckoning(b[88:], &p.DeadReckoning)
	getMarking(b[128:], &p.Marking)
	p.Capabilities = be.Uint32(b[140:])
	p.ArticulationParameters = getArticulations(p.ArticulationParameters, b[EntityStateSize:], count)
	return nil
}

// CollisionPDU (type 4, family Entity Information/Interaction) reports a
// collision. 60 bytes:
//
//	 0 header                         12
//	12 issuing entity id               6
//	18 colliding entity id             6
//	24 event id                        6
//	30 collision type                  1
//	31 padding                         1
//	32 velocity                       12 (3 x float32)
//	44 mass (kg)                       4 (float32)
//	48 location (entity coordinates)  12 (3 x float32)
type CollisionPDU struct {
	Header            Header
	IssuingEntityID   EntityID
	CollidingEntityID EntityID
	EventID           EventID
	CollisionType     uint8
	Velocity          Vector3Float
	Mass              float32
	Location          Vector3Float
}

var collisionLayout = withHeader(
	field{12, "issuing entity id"}, field{18, "colliding entity id"},
	field{24, "event id"}, field{30, "collision type"}, field{31, "padding"},
	field{32, "velocity"}, field{44, "mass"}, field{48, "location"},
)

// Type returns TypeCollision.
func (p *CollisionPDU) Type() PDUType { return TypeCollision }

// Len returns 60.
func (p *CollisionPDU) Len() int { return CollisionSize }

// MarshalTo encodes p into b[:60] and returns 60.
func (p *CollisionPDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeCollision, 0, 0, "", 0)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeCollision, n)
	putEntityID(b[12:], p.IssuingEntityID)
	putEntityID(b[18:], p.CollidingEntityID)
	putEventID(b[24:], p.EventID)
	b[30] = p.CollisionType
	b[31] = 0
	putVec3F(b[32:], p.Velocity)
	putF32(b[44:], p.Mass)
	putVec3F(b[48:], p.Location)
	return n, nil
}

// UnmarshalBinary decodes one Collision PDU that is exactly b.
func (p *CollisionPDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeCollision, collisionLayout); err != nil {
		return err
	}
	if err := checkFixed(b, TypeCollision); err != nil {
		return err
	}
	_ = b[CollisionSize-1]
	p.Header = getHeader(b)
	p.IssuingEntityID = getEntityID(b[12:])
	p.CollidingEntityID = getEntityID(b[18:])
	p.EventID = getEventID(b[24:])
	p.CollisionType = b[30]
	p.Velocity = getVec3F(b[32:])
	p.Mass = getF32(b[44:])
	p.Location = getVec3F(b[48:])
	return nil
}
