package dis

// MessageAddress is the 2-byte "message address" of Bobo's 1997 AFIT thesis
// (Message-Bundle Converting in IP Multicast-Based HLA Exercises, sec.
// 3.1.1.4 and 3.1.3): the publish/subscribe address of a message, fixed
// across all hosts of an exercise. Because the IP multicast address a
// packet arrived on cannot be read back at the receiver, the thesis puts
// the message address inside the message itself, as a 2-byte header ahead
// of the PDU. This package writes it big-endian (network order; the
// thesis's SGI hosts were big-endian and copied it with memcpy):
//
//	offset 0  message address  uint16
//	offset 2  DIS PDU          (Header.Length bytes)
//
// The thesis also mentions an optional priority flag that halves the space
// to 0..32767; this type does not interpret any bit of the address.
type MessageAddress uint16

// MessageAddressSize is the size of the message address prefix.
const MessageAddressSize = 2

// MessagesPerPacketAddress is the thesis's divisor from message address to
// packet address ("the packet address is the message address divided by
// 32").
const MessagesPerPacketAddress = 32

// PacketAddress returns the thesis's packet address of a: a / 32, in
// 0..2047 for the full 16-bit space. This is an index, not an IP address:
// mapping it onto a concrete multicast group range is done elsewhere.
func (a MessageAddress) PacketAddress() uint16 {
	return uint16(a) / MessagesPerPacketAddress
}

// AppendMessageAddress appends a's 2-byte big-endian encoding to dst.
func AppendMessageAddress(dst []byte, a MessageAddress) []byte {
	return append(dst, byte(a>>8), byte(a))
}

// AppendAddressed appends a's 2-byte prefix followed by the encoding of p.
// On error dst is returned unchanged.
func AppendAddressed(dst []byte, a MessageAddress, p PDU) ([]byte, error) {
	out, err := AppendMarshal(AppendMessageAddress(dst, a), p)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// SplitMessageAddress splits an addressed message into its message address
// and the bytes that follow it (the PDU, not decoded nor copied).
func SplitMessageAddress(b []byte) (MessageAddress, []byte, error) {
	if len(b) < MessageAddressSize {
		return 0, nil, &Error{Op: "decode", Field: "message address", Offset: 0, Err: ErrShort,
			Detail: "have " + itoa(len(b)) + " bytes, the message address needs 2"}
	}
	return MessageAddress(be.Uint16(b)), b[MessageAddressSize:], nil
}
