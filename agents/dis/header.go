package dis

import (
	"math/bits"
	"time"
)

// Header is the 12-byte PDU header that starts every PDU:
//
//	offset 0  protocol version  uint8
//	offset 1  exercise id       uint8
//	offset 2  PDU type          uint8
//	offset 3  protocol family   uint8
//	offset 4  timestamp         uint32
//	offset 8  length            uint16 (whole PDU, header included)
//	offset 10 padding           2 bytes (written as zero, ignored on decode)
//
// When encoding, PDUType and Length are not read: the PDU's Type() and
// Len() are written instead. The other fields are written as they are (use
// NewHeader for the standard version and family). Decoding fills every
// field from the bytes.
type Header struct {
	ProtocolVersion uint8
	ExerciseID      uint8
	PDUType         PDUType
	ProtocolFamily  ProtocolFamily
	Timestamp       uint32
	Length          uint16
}

// NewHeader returns a header for a PDU of type t with ProtocolVersion, the
// standard family of t, and the given exercise and timestamp.
func NewHeader(t PDUType, exerciseID uint8, timestamp uint32) Header {
	return Header{
		ProtocolVersion: ProtocolVersion,
		ExerciseID:      exerciseID,
		PDUType:         t,
		ProtocolFamily:  t.Family(),
		Timestamp:       timestamp,
	}
}

// put writes h into b[0:12] with type t and length n.
func (h *Header) put(b []byte, t PDUType, n int) {
	_ = b[11]
	b[0] = h.ProtocolVersion
	b[1] = h.ExerciseID
	b[2] = uint8(t)
	b[3] = uint8(h.ProtocolFamily)
	be.PutUint32(b[4:], h.Timestamp)
	be.PutUint16(b[8:], uint16(n))
	b[10], b[11] = 0, 0
}

func getHeader(b []byte) Header {
	_ = b[11]
	return Header{
		ProtocolVersion: b[0],
		ExerciseID:      b[1],
		PDUType:         PDUType(b[2]),
		ProtocolFamily:  ProtocolFamily(b[3]),
		Timestamp:       be.Uint32(b[4:]),
		Length:          be.Uint16(b[8:]),
	}
}

// PeekHeader decodes only the header at the start of b, without checking
// the rest. A receiver can use it to route or to split a datagram that
// carries several PDUs back to back (each is Header.Length bytes long).
func PeekHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		name, off := headerLayout.at(len(b))
		var t PDUType
		if len(b) > 2 {
			t = PDUType(b[2])
		}
		return Header{}, decodeErr(t, name, off, ErrShort,
			"have "+itoa(len(b))+" bytes, the header needs 12")
	}
	return getHeader(b), nil
}

// checkFrame validates what is common to all PDUs before a type-specific
// decoder touches b: the header is present and names type t, the length
// field equals len(b), and b holds at least t's fixed part.
func checkFrame(b []byte, t PDUType, lay layout) error {
	if len(b) < HeaderSize {
		name, off := lay.at(len(b))
		return decodeErr(t, name, off, ErrShort,
			"have "+itoa(len(b))+" bytes, the header needs 12")
	}
	if got := PDUType(b[2]); got != t {
		return decodeErr(t, "PDU type", 2, ErrWrongType, "header says "+got.String())
	}
	if len(b) > MaxPDUSize {
		return decodeErr(t, "length", 8, ErrTooLarge,
			"have "+itoa(len(b))+" bytes, maximum is "+itoa(MaxPDUSize))
	}
	hl := int(be.Uint16(b[8:]))
	if hl > len(b) {
		name, off := lay.at(len(b))
		return decodeErr(t, name, off, ErrShort,
			"length field says "+itoa(hl)+" bytes, have "+itoa(len(b))+" (truncated)")
	}
	if hl < len(b) {
		return decodeErr(t, "length", 8, ErrLength,
			"length field says "+itoa(hl)+" bytes, have "+itoa(len(b)))
	}
	if fixed := t.FixedSize(); len(b) < fixed {
		name, off := lay.at(len(b))
		return decodeErr(t, name, off, ErrShort,
			"PDU is "+itoa(len(b))+" bytes, its fixed part needs "+itoa(fixed))
	}
	return nil
}

// checkCount verifies that n records of recSize bytes after t's fixed part
// account exactly for len(b).
func checkCount(b []byte, t PDUType, n, recSize int, countField string, countOff int, what string) error {
	if want := t.FixedSize() + n*recSize; want != len(b) {
		return decodeErr(t, countField, countOff, ErrCount,
			itoa(n)+" "+what+" need a "+itoa(want)+"-byte PDU, it is "+itoa(len(b))+" bytes")
	}
	return nil
}

// checkFixed verifies that a PDU of a fixed-size type t is exactly its size.
func checkFixed(b []byte, t PDUType) error {
	if want := t.FixedSize(); want != len(b) {
		return decodeErr(t, "length", 8, ErrLength,
			t.String()+" PDU is "+itoa(want)+" bytes, length field says "+itoa(len(b)))
	}
	return nil
}

// prepareEncode checks the record count and the output buffer and returns
// the PDU length.
func prepareEncode(b []byte, t PDUType, n int, recSize int, countField string, countOff int) (int, error) {
	if n > MaxRecords {
		return 0, encodeErr(t, countField, countOff, ErrCount,
			itoa(n)+" records, the 8-bit count field holds at most 255")
	}
	size := t.FixedSize() + n*recSize
	if len(b) < size {
		return 0, encodeErr(t, "", -1, ErrShort,
			"buffer is "+itoa(len(b))+" bytes, PDU needs "+itoa(size))
	}
	return size, nil
}

// Timestamps: the upper 31 bits count units of 3600 s / 2^31 (about 1.676
// microseconds) since the start of the current hour; the low bit is 1 for
// an absolute timestamp (clocks synchronised to UTC) and 0 for a relative
// one.

// NewTimestamp encodes a time past the hour (taken modulo one hour).
func NewTimestamp(sinceHour time.Duration, absolute bool) uint32 {
	d := sinceHour % time.Hour
	if d < 0 {
		d += time.Hour
	}
	hi, lo := bits.Mul64(uint64(d), 1<<31)
	units, _ := bits.Div64(hi, lo, uint64(time.Hour))
	ts := uint32(units) << 1
	if absolute {
		ts |= 1
	}
	return ts
}

// TimestampDuration decodes a timestamp into the time past the hour
// (rounded down to the nanosecond) and its absolute flag.
func TimestampDuration(ts uint32) (sinceHour time.Duration, absolute bool) {
	hi, lo := bits.Mul64(uint64(ts>>1), uint64(time.Hour))
	return time.Duration(hi<<33 | lo>>31), ts&1 == 1
}
