package dis

// FirePDU (type 2, family Warfare) reports the firing of a weapon. 96
// bytes:
//
//	 0 header                          12
//	12 firing entity id                 6
//	18 target entity id                 6
//	24 munition id                      6 (an entity id)
//	30 event id                         6
//	36 fire mission index               4
//	40 location (world coordinates)    24 (3 x float64)
//	64 burst descriptor                16
//	80 velocity                        12 (3 x float32)
//	92 range (m)                        4 (float32)
type FirePDU struct {
	Header           Header
	FiringEntityID   EntityID
	TargetEntityID   EntityID
	MunitionID       EntityID
	EventID          EventID
	FireMissionIndex uint32
	Location         Vector3Double
	Burst            BurstDescriptor
	Velocity         Vector3Float
	Range            float32
}

var fireLayout = withHeader(
	field{12, "firing entity id"}, field{18, "target entity id"},
	field{24, "munition id"}, field{30, "event id"},
	field{36, "fire mission index"}, field{40, "location"},
	field{64, "burst descriptor"}, field{80, "velocity"}, field{92, "range"},
)

// Type returns TypeFire.
func (p *FirePDU) Type() PDUType { return TypeFire }

// Len returns 96.
func (p *FirePDU) Len() int { return FireSize }

// MarshalTo encodes p into b[:96] and returns 96.
func (p *FirePDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeFire, 0, 0, "", 0)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeFire, n)
	putEntityID(b[12:], p.FiringEntityID)
	putEntityID(b[18:], p.TargetEntityID)
	putEntityID(b[24:], p.MunitionID)
	putEventID(b[30:], p.EventID)
	be.PutUint32(b[36:], p.FireMissionIndex)
	putVec3D(b[40:], p.Location)
	putBurst(b[64:], p.Burst)
	putVec3F(b[80:], p.Velocity)
	putF32(b[92:], p.Range)
	return n, nil
}

// UnmarshalBinary decodes one Fire PDU that is exactly b.
func (p *FirePDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeFire, fireLayout); err != nil {
		return err
	}
	if err := checkFixed(b, TypeFire); err != nil {
		return err
	}
	_ = b[FireSize-1]
	p.Header = getHeader(b)
	p.FiringEntityID = getEntityID(b[12:])
	p.TargetEntityID = getEntityID(b[18:])
	p.MunitionID = getEntityID(b[24:])
	p.EventID = getEventID(b[30:])
	p.FireMissionIndex = be.Uint32(b[36:])
	p.Location = getVec3D(b[40:])
	p.Burst = getBurst(b[64:])
	p.Velocity = getVec3F(b[80:])
	p.Range = getF32(b[92:])
	return nil
}

// DetonationPDU (type 3, family Warfare) reports the detonation or impact
// of a munition. 104 bytes plus 16 per articulation parameter:
//
//	  0 header                          12
//	 12 firing entity id                 6
//	 18 target entity id                 6
//	 24 munition id                      6
//	 30 event id                         6
//	 36 velocity                        12 (3 x float32)
//	 48 location (world coordinates)    24 (3 x float64)
//	 72 burst descriptor                16
//	 88 location (entity coordinates)   12 (3 x float32)
//	100 detonation result                1
//	101 number of articulation params    1 (len(ArticulationParameters))
//	102 padding                          2
//	104 articulation parameters         16 each
type DetonationPDU struct {
	Header                 Header
	FiringEntityID         EntityID
	TargetEntityID         EntityID
	MunitionID             EntityID
	EventID                EventID
	Velocity               Vector3Float
	Location               Vector3Double
	Burst                  BurstDescriptor
	LocationInEntity       Vector3Float
	DetonationResult       uint8
	ArticulationParameters []ArticulationParameter
}

var detonationLayout = withHeader(
	field{12, "firing entity id"}, field{18, "target entity id"},
	field{24, "munition id"}, field{30, "event id"}, field{36, "velocity"},
	field{48, "location"}, field{72, "burst descriptor"},
	field{88, "location in entity coordinates"}, field{100, "detonation result"},
	field{101, "number of articulation parameters"}, field{102, "padding"},
	field{104, "articulation parameters"},
)

// Type returns TypeDetonation.
func (p *DetonationPDU) Type() PDUType { return TypeDetonation }

// Len returns 104 + 16 * len(ArticulationParameters).
func (p *DetonationPDU) Len() int {
	return DetonationSize + len(p.ArticulationParameters)*ArticulationParameterSize
}

// MarshalTo encodes p into b[:p.Len()] and returns p.Len().
func (p *DetonationPDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeDetonation, len(p.ArticulationParameters),
		ArticulationParameterSize, "number of articulation parameters", 101)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeDetonation, n)
	putEntityID(b[12:], p.FiringEntityID)
	putEntityID(b[18:], p.TargetEntityID)
	putEntityID(b[24:], p.MunitionID)
	putEventID(b[30:], p.EventID)
	putVec3F(b[36:], p.Velocity)
	putVec3D(b[48:], p.Location)
	putBurst(b[72:], p.Burst)
	putVec3F(b[88:], p.LocationInEntity)
	b[100] = p.DetonationResult
	b[101] = uint8(len(p.ArticulationParameters))
	b[102], b[103] = 0, 0
	putArticulations(b[DetonationSize:], p.ArticulationParameters)
	return n, nil
}

// UnmarshalBinary decodes one Detonation PDU that is exactly b. The
// ArticulationParameters slice is reused when its capacity suffices.
func (p *DetonationPDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeDetonation, detonationLayout); err != nil {
		return err
	}
	count := int(b[101])
	if err := checkCount(b, TypeDetonation, count, ArticulationParameterSize,
		"number of articulation parameters", 101, "articulation parameters"); err != nil {
		return err
	}
	_ = b[DetonationSize-1]
	p.Header = getHeader(b)
	p.FiringEntityID = getEntityID(b[12:])
	p.TargetEntityID = getEntityID(b[18:])
	p.MunitionID = getEntityID(b[24:])
	p.EventID = getEventID(b[30:])
	p.Velocity = getVec3F(b[36:])
	p.Location = getVec3D(b[48:])
	p.Burst = getBurst(b[72:])
	p.LocationInEntity = getVec3F(b[88:])
	p.DetonationResult = b[100]
	p.ArticulationParameters = getArticulations(p.ArticulationParameters, b[DetonationSize:], count)
	return nil
}
