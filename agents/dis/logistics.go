package dis

// The logistics family (family 3): six PDUs between a receiving entity and
// the entity that supplies or repairs it. Three of them carry a list of
// 12-byte SupplyQuantity records.

// ServiceRequestPDU (type 5) requests supplies or repair. 28 bytes plus 12
// per supply quantity:
//
//	 0 header                    12
//	12 requesting entity id       6
//	18 servicing entity id        6
//	24 service type requested     1
//	25 number of supply types     1 (len(Supplies))
//	26 padding                    2
//	28 supplies                  12 each
type ServiceRequestPDU struct {
	Header             Header
	RequestingEntityID EntityID
	ServicingEntityID  EntityID
	ServiceType        uint8
	Supplies           []SupplyQuantity
}

var serviceRequestLayout = withHeader(
	field{12, "requesting entity id"}, field{18, "servicing entity id"},
	field{24, "service type requested"}, field{25, "number of supply types"},
	field{26, "padding"}, field{28, "supplies"},
)

// Type returns TypeServiceRequest.
func (p *ServiceRequestPDU) Type() PDUType { return TypeServiceRequest }

// Len returns 28 + 12 * len(Supplies).
func (p *ServiceRequestPDU) Len() int {
	return ServiceRequestSize + len(p.Supplies)*SupplyQuantitySize
}

// MarshalTo encodes p into b[:p.Len()] and returns p.Len().
func (p *ServiceRequestPDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeServiceRequest, len(p.Supplies),
		SupplyQuantitySize, "number of supply types", 25)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeServiceRequest, n)
	putEntityID(b[12:], p.RequestingEntityID)
	putEntityID(b[18:], p.ServicingEntityID)
	b[24] = p.ServiceType
	b[25] = uint8(len(p.Supplies))
	b[26], b[27] = 0, 0
	putSupplies(b[ServiceRequestSize:], p.Supplies)
	return n, nil
}

// UnmarshalBinary decodes one Service Request PDU that is exactly b. The
// Supplies slice is reused when its capacity suffices.
func (p *ServiceRequestPDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeServiceRequest, serviceRequestLayout); err != nil {
		return err
	}
	count := int(b[25])
	if err := checkCount(b, TypeServiceRequest, count, SupplyQuantitySize,
		"number of supply types", 25, "supply quantities"); err != nil {
		return err
	}
	_ = b[ServiceRequestSize-1]
	p.Header = getHeader(b)
	p.RequestingEntityID = getEntityID(b[12:])
	p.ServicingEntityID = getEntityID(b[18:])
	p.ServiceType = b[24]
	p.Supplies = getSupplies(p.Supplies, b[ServiceRequestSize:], count)
	return nil
}

// ResupplyOfferPDU (type 6) offers supplies. 28 bytes plus 12 per supply
// quantity:
//
//	 0 header                    12
//	12 receiving entity id        6
//	18 supplying entity id        6
//	24 number of supply types     1 (len(Supplies))
//	25 padding                    3
//	28 supplies                  12 each
type ResupplyOfferPDU struct {
	Header            Header
	ReceivingEntityID EntityID
	SupplyingEntityID EntityID
	Supplies          []SupplyQuantity
}

// ResupplyReceivedPDU (type 7) acknowledges supplies received. Same layout
// as ResupplyOfferPDU: 28 bytes plus 12 per supply quantity.
type ResupplyReceivedPDU struct {
	Header            Header
	ReceivingEntityID EntityID
	SupplyingEntityID EntityID
	Supplies          []SupplyQuantity
}

var resupplyLayout = withHeader(
	field{12, "receiving entity id"}, field{18, "supplying entity id"},
	field{24, "number of supply types"}, field{25, "padding"},
	field{28, "supplies"},
)

// Type returns TypeResupplyOffer.
func (p *ResupplyOfferPDU) Type() PDUType { return TypeResupplyOffer }

// Len returns 28 + 12 * len(Supplies).
func (p *ResupplyOfferPDU) Len() int { return ResupplyOfferSize + len(p.Supplies)*SupplyQuantitySize }

// MarshalTo encodes p into b[:p.Len()] and returns p.Len().
func (p *ResupplyOfferPDU) MarshalTo(b []byte) (int, error) {
	return marshalResupply(b, TypeResupplyOffer, &p.Header, p.ReceivingEntityID, p.SupplyingEntityID, p.Supplies)
}

// UnmarshalBinary decodes one Resupply Offer PDU that is exactly b.
func (p *ResupplyOfferPDU) UnmarshalBinary(b []byte) error {
	return unmarshalResupply(b, TypeResupplyOffer, &p.Header, &p.ReceivingEntityID, &p.SupplyingEntityID, &p.Supplies)
}

// Type returns TypeResupplyReceived.
func (p *ResupplyReceivedPDU) Type() PDUType { return TypeResupplyReceived }

// Len returns 28 + 12 * len(Supplies).
func (p *ResupplyReceivedPDU) Len() int {
	return ResupplyReceivedSize + len(p.Supplies)*SupplyQuantitySize
}

// MarshalTo encodes p into b[:p.Len()] and returns p.Len().
func (p *ResupplyReceivedPDU) MarshalTo(b []byte) (int, error) {
	return marshalResupply(b, TypeResupplyReceived, &p.Header, p.ReceivingEntityID, p.SupplyingEntityID, p.Supplies)
}

// UnmarshalBinary decodes one Resupply Received PDU that is exactly b.
func (p *ResupplyReceivedPDU) UnmarshalBinary(b []byte) error {
	return unmarshalResupply(b, TypeResupplyReceived, &p.Header, &p.ReceivingEntityID, &p.SupplyingEntityID, &p.Supplies)
}

func marshalResupply(b []byte, t PDUType, h *Header, recv, supp EntityID, s []SupplyQuantity) (int, error) {
	n, err := prepareEncode(b, t, len(s), SupplyQuantitySize, "number of supply types", 24)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	h.put(b, t, n)
	putEntityID(b[12:], recv)
	putEntityID(b[18:], supp)
	b[24] = uint8(len(s))
	b[25], b[26], b[27] = 0, 0, 0
	putSupplies(b[ResupplyOfferSize:], s)
	return n, nil
}

func unmarshalResupply(b []byte, t PDUType, h *Header, recv, supp *EntityID, s *[]SupplyQuantity) error {
	if err := checkFrame(b, t, resupplyLayout); err != nil {
		return err
	}
	count := int(b[24])
	if err := checkCount(b, t, count, SupplyQuantitySize,
		"number of supply types", 24, "supply quantities"); err != nil {
		return err
	}
	_ = b[ResupplyOfferSize-1]
	*h = getHeader(b)
	*recv = getEntityID(b[12:])
	*supp = getEntityID(b[18:])
	*s = getSupplies(*s, b[ResupplyOfferSize:], count)
	return nil
}

// ResupplyCancelPDU (type 8) cancels a resupply. 24 bytes:
//
//	 0 header                    12
//	12 receiving entity id        6
//	18 supplying entity id        6
type ResupplyCancelPDU struct {
	Header            Header
	ReceivingEntityID EntityID
	SupplyingEntityID EntityID
}

var resupplyCancelLayout = withHeader(
	field{12, "receiving entity id"}, field{18, "supplying entity id"},
)

// Type returns TypeResupplyCancel.
func (p *ResupplyCancelPDU) Type() PDUType { return TypeResupplyCancel }

// Len returns 24.
func (p *ResupplyCancelPDU) Len() int { return ResupplyCancelSize }

// MarshalTo encodes p into b[:24] and returns 24.
func (p *ResupplyCancelPDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeResupplyCancel, 0, 0, "", 0)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeResupplyCancel, n)
	putEntityID(b[12:], p.ReceivingEntityID)
	putEntityID(b[18:], p.SupplyingEntityID)
	return n, nil
}

// UnmarshalBinary decodes one Resupply Cancel PDU that is exactly b.
func (p *ResupplyCancelPDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeResupplyCancel, resupplyCancelLayout); err != nil {
		return err
	}
	if err := checkFixed(b, TypeResupplyCancel); err != nil {
		return err
	}
	_ = b[ResupplyCancelSize-1]
	p.Header = getHeader(b)
	p.ReceivingEntityID = getEntityID(b[12:])
	p.SupplyingEntityID = getEntityID(b[18:])
	return nil
}

// RepairCompletePDU (type 9) reports a completed repair. 28 bytes:
//
//	 0 header                    12
//	12 receiving entity id        6
//	18 repairing entity id        6
//	24 repair                     2 (what was repaired)
//	26 padding                    2
type RepairCompletePDU struct {
	Header            Header
	ReceivingEntityID EntityID
	RepairingEntityID EntityID
	Repair            uint16
}

var repairCompleteLayout = withHeader(
	field{12, "receiving entity id"}, field{18, "repairing entity id"},
	field{24, "repair"}, field{26, "padding"},
)

// Type returns TypeRepairComplete.
func (p *RepairCompletePDU) Type() PDUType { return TypeRepairComplete }

// Len returns 28.
func (p *RepairCompletePDU) Len() int { return RepairCompleteSize }

// MarshalTo encodes p into b[:28] and returns 28.
func (p *RepairCompletePDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeRepairComplete, 0, 0, "", 0)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeRepairComplete, n)
	putEntityID(b[12:], p.ReceivingEntityID)
	putEntityID(b[18:], p.RepairingEntityID)
	be.PutUint16(b[24:], p.Repair)
	b[26], b[27] = 0, 0
	return n, nil
}

// UnmarshalBinary decodes one Repair Complete PDU that is exactly b.
func (p *RepairCompletePDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeRepairComplete, repairCompleteLayout); err != nil {
		return err
	}
	if err := checkFixed(b, TypeRepairComplete); err != nil {
		return err
	}
	_ = b[RepairCompleteSize-1]
	p.Header = getHeader(b)
	p.ReceivingEntityID = getEntityID(b[12:])
	p.RepairingEntityID = getEntityID(b[18:])
	p.Repair = be.Uint16(b[24:])
	return nil
}

// RepairResponsePDU (type 10) answers a Repair Complete. 28 bytes:
//
//	 0 header                    12
//	12 receiving entity id        6
//	18 repairing entity id        6
//	24 repair result              1
//	25 padding                    3
type RepairResponsePDU struct {
	Header            Header
	ReceivingEntityID EntityID
	RepairingEntityID EntityID
	RepairResult      uint8
}

var repairResponseLayout = withHeader(
	field{12, "receiving entity id"}, field{18, "repairing entity id"},
	field{24, "repair result"}, field{25, "padding"},
)

// Type returns TypeRepairResponse.
func (p *RepairResponsePDU) Type() PDUType { return TypeRepairResponse }

// Len returns 28.
func (p *RepairResponsePDU) Len() int { return RepairResponseSize }

// MarshalTo encodes p into b[:28] and returns 28.
func (p *RepairResponsePDU) MarshalTo(b []byte) (int, error) {
	n, err := prepareEncode(b, TypeRepairResponse, 0, 0, "", 0)
	if err != nil {
		return 0, err
	}
	b = b[:n]
	p.Header.put(b, TypeRepairResponse, n)
	putEntityID(b[12:], p.ReceivingEntityID)
	putEntityID(b[18:], p.RepairingEntityID)
	b[24] = p.RepairResult
	b[25], b[26], b[27] = 0, 0, 0
	return n, nil
}

// UnmarshalBinary decodes one Repair Response PDU that is exactly b.
func (p *RepairResponsePDU) UnmarshalBinary(b []byte) error {
	if err := checkFrame(b, TypeRepairResponse, repairResponseLayout); err != nil {
		return err
	}
	if err := checkFixed(b, TypeRepairResponse); err != nil {
		return err
	}
	_ = b[RepairResponseSize-1]
	p.Header = getHeader(b)
	p.ReceivingEntityID = getEntityID(b[12:])
	p.RepairingEntityID = getEntityID(b[18:])
	p.RepairResult = b[24]
	return nil
}
