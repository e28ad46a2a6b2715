// Package dis encodes and decodes, byte for byte, the ten Distributed
// Interactive Simulation (DIS, IEEE 1278.1) PDU types that Loper et al.
// measured in "Evaluating the Overhead of OSI Stacks in Interoperable DIS
// Networks".
//
// # What DIS is here
//
// DIS is the simulation-interoperability protocol whose PDUs the protolab
// hosts exchange: each simulated entity multicasts or broadcasts fixed-layout
// binary records over UDP (customarily port 3000, see Port). The paper sent
// ten PDU types "without transfer syntax" (the PDU as a plain byte string)
// and with an ASN.1/BER transfer syntax, and compared end-to-end delays; this
// package is the plain byte string side: the native DIS encoding, big-endian,
// with the standard's exact field offsets and padding. The AFIT thesis on
// IP-multicast DIS (Bobo, 1997) adds a 2-byte message address ahead of each
// PDU; see MessageAddress.
//
// # Version
//
// Layouts are those of IEEE 1278.1-1995 as implemented by Open-DIS "dis6"
// and Wireshark's DIS dissector; NewHeader writes protocol version 6
// (ProtocolVersion, IEEE 1278.1a-1998, which left these ten layouts
// unchanged). The paper itself used DIS 1.0, whose records differ in
// places, so its Table 2 field counts are not those of these structs. The
// 2-byte field at header offset 10 is padding (DIS 7 turned it into PDU
// status): it is written as zero and ignored when decoding.
//
// # The ten PDU types and their sizes
//
//	type  struct               family                  bytes
//	  1   EntityStatePDU       Entity Information (1)  144 + 16 per articulation parameter
//	  2   FirePDU              Warfare (2)              96
//	  3   DetonationPDU        Warfare (2)             104 + 16 per articulation parameter
//	  4   CollisionPDU         Entity Information (1)   60
//	  5   ServiceRequestPDU    Logistics (3)            28 + 12 per supply quantity
//	  6   ResupplyOfferPDU     Logistics (3)            28 + 12 per supply quantity
//	  7   ResupplyReceivedPDU  Logistics (3)            28 + 12 per supply quantity
//	  8   ResupplyCancelPDU    Logistics (3)            24
//	  9   RepairCompletePDU    Logistics (3)            28
//	 10   RepairResponsePDU    Logistics (3)            28
//
// Each struct's documentation gives its field offsets. Shared records:
// Header (12 bytes), EntityID and EventID (6), EntityType (8), Vector3Float
// (12), Vector3Double (24, world coordinates), Orientation (12),
// DeadReckoning (40), Marking (12), BurstDescriptor (16),
// ArticulationParameter (16), SupplyQuantity (12: an EntityType and a
// float32 quantity). Appearance and capabilities are plain uint32 bit
// fields. Record counts are 8-bit, so a PDU carries at most 255 records of
// a kind; no PDU here can exceed MaxPDUSize (8192 bytes, the DIS maximum
// and the size receive buffers should have).
//
// # Usage
//
// Sending, without allocating per PDU:
//
//	es := &dis.EntityStatePDU{Header: dis.NewHeader(dis.TypeEntityState, 1, ts)}
//	es.EntityID = dis.EntityID{Site: 1, Application: 2, Entity: 3}
//	es.Marking = dis.NewMarking("TANK-1")
//	buf := make([]byte, dis.MaxPDUSize)
//	n, err := es.MarshalTo(buf) // buf[:n] is the datagram
//
// or buf, err = dis.AppendMarshal(buf[:0], es), or dis.Marshal(es) for a
// fresh slice. The header's type and length fields always come from Type()
// and Len(); the version, exercise, family and timestamp are written as
// set (NewHeader fills the standard ones).
//
// Receiving:
//
//	p, err := dis.Decode(datagram) // new struct per call
//	var d dis.Decoder
//	p, err = d.Decode(datagram)    // reuses d's structs: no allocation
//	switch p := p.(type) {
//	case *dis.EntityStatePDU: ...
//	}
//
// or, when the type is known, es.UnmarshalBinary(datagram) into a reused
// struct. Decoding requires the header's length field to equal the number
// of bytes given and the record counts to account for exactly that length;
// PeekHeader reads just the header, e.g. to split a datagram holding
// several PDUs.
//
// # Errors
//
// Malformed input never panics and never makes the decoder allocate more
// than the records the (length-checked) input holds. Every error is an
// *Error naming the operation, PDU type, field and offset, wrapping one of
// ErrShort, ErrUnknownType, ErrWrongType, ErrLength, ErrCount or
// ErrTooLarge (test with errors.Is).
//
// # Round trips
//
// Decoding then encoding reproduces the input exactly except for padding
// bytes, which decode ignores and encode writes as zero: header bytes
// 10-11, Detonation 102-103, Collision 31, Service Request 26-27, Resupply
// Offer/Received 25-27, Repair Complete 26-27 and Repair Response 25-27.
// Floats are carried as raw bits (NaN payloads included), marking
// characters, dead-reckoning "other parameters" and articulation parameter
// values verbatim.
//
// # Cross-checking
//
// WritePCAP writes the PDUs as Ethernet/IPv4/UDP frames on port 3000 in a
// classic pcap file, which Wireshark's DIS dissector decodes; the package
// test TestTsharkDecodesEveryType does so when tshark is on PATH. With
// tshark 4.0.17 every field it shows for Entity State, Fire, Detonation and
// Collision matches; that version dissects only the header of the six
// logistics PDUs. Wireshark reads an articulated part's parameter value as
// a float32 followed by padding (ArticulationParameter.Float32), where
// Open-DIS v6 reads a float64: the raw 8 bytes are the same either way.
package dis
