package tp4

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Type is a TPDU code (ISO 8073 table 8, high four bits of octet 2).
type Type uint8

// TPDU codes.
const (
	CR Type = 0xE0 // connection request
	CC Type = 0xD0 // connection confirm
	DR Type = 0x80 // disconnect request
	DC Type = 0xC0 // disconnect confirm
	DT Type = 0xF0 // data
	ED Type = 0x10 // expedited data
	AK Type = 0x60 // data acknowledgement
	EA Type = 0x20 // expedited data acknowledgement
)

var typeNames = map[Type]string{CR: "CR", CC: "CC", DR: "DR", DC: "DC", DT: "DT", ED: "ED", AK: "AK", EA: "EA"}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("0x%02x", uint8(t))
}

// Wire constants.
const (
	// ClassOption is octet 7 of CR/CC: class 4 with extended formats
	// (31-bit sequence numbers, 16-bit credit).
	ClassOption = 0x42
	// ParamTPDUSize carries log2 of the TPDU size in CR/CC (ISO 8073).
	ParamTPDUSize = 0xC0
	// ParamOptions is "additional option selection" in CR/CC.
	ParamOptions = 0xC6
	// ParamSelective is the AK parameter that carries the paper's optional
	// sequence number (Fig. 3). The paper leaves the code to be agreed;
	// this is ours.
	ParamSelective = 0x8F

	// OptExpedited (in ParamOptions) asks for the expedited data service.
	OptExpedited = 0x01
	// OptSelective (in ParamOptions) offers selective acknowledgement;
	// it is used only when the CC echoes it (both ends must have it).
	OptSelective = 0x20

	// DTHeader is the length of a DT (and ED) TPDU header in extended
	// format: LI, code, DST-REF (2), EOT + TPDU-NR (4).
	DTHeader = 8
	// AKHeader is the fixed part of an AK: LI, code, DST-REF, YR-TU-NR (4), CDT (2).
	AKHeader = 10
	// MaxExpedited is the most user data an ED TPDU carries.
	MaxExpedited = 16
	// MaxSeq is the largest sequence number (31 bits).
	MaxSeq = 1<<31 - 1

	// ReasonNormal is the DR reason of a normal disconnect by the user.
	ReasonNormal = 0x80
	// ReasonGiveUp is our DR reason after MaxTransmissions (ISO: 0x00,
	// reason not specified).
	ReasonGiveUp = 0x00
)

// MinTPDUSize and MaxTPDUSize bound the TPDU size (class 4: 128..8192,
// powers of two).
const (
	MinTPDUSize = 128
	MaxTPDUSize = 8192
)

// TPDU is one decoded transport protocol data unit. Which fields mean
// something depends on Type; Data aliases the decoded buffer.
type TPDU struct {
	Type    Type
	CDT     uint8  // CR, CC: initial credit (4 bits)
	DstRef  uint16 // all
	SrcRef  uint16 // CR, CC, DR, DC
	Class   uint8  // CR, CC: class and option octet
	SizeLog uint8  // CR, CC: log2 of the TPDU size; 0 when absent
	Options uint8  // CR, CC: additional option selection
	Reason  uint8  // DR
	Seq     uint32 // DT, ED: TPDU-NR; AK, EA: YR-TU-NR (next expected)
	EOT     bool   // DT, ED
	Credit  uint16 // AK
	HasSel  bool   // AK: the optional sequence number is present
	Sel     uint32 // AK: the selectively acknowledged TPDU-NR
	Data    []byte // DT, ED: user data
}

// Decode errors; every one is a drop with a reason (see Reason).
var (
	ErrShort    = errors.New("shorter than its fixed part")
	ErrLength   = errors.New("length indicator beyond the datagram")
	ErrType     = errors.New("unknown TPDU code")
	ErrParam    = errors.New("malformed parameter")
	ErrValue    = errors.New("field out of range")
	ErrTooLarge = errors.New("user data too long")
)

// reasons of the decode errors, for counters.
var reasons = []struct {
	err    error
	reason string
}{
	{ErrShort, "short"}, {ErrLength, "length"}, {ErrType, "type"}, {ErrParam, "param"},
	{ErrValue, "value"}, {ErrTooLarge, "too_large"},
}

// DecodeError is what Decode returns: the sentinel, the TPDU type when it
// was known and a detail.
type DecodeError struct {
	Err    error
	Type   Type
	Detail string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("tp4: %v TPDU: %v (%s)", e.Type, e.Err, e.Detail)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Reason is the short drop reason of a decode error ("short", "length",
// ...), or "other".
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "other"
}

func derr(t Type, err error, f string, a ...any) error {
	return &DecodeError{Err: err, Type: t, Detail: fmt.Sprintf(f, a...)}
}

var be = binary.BigEndian

// fixed is the length of each type's fixed part, LI octet included.
var fixed = map[Type]int{CR: 7, CC: 7, DR: 7, DC: 6, DT: DTHeader, ED: DTHeader, AK: AKHeader, EA: 8}

// Decode parses one TPDU. It never panics; a malformed TPDU gives a
// *DecodeError. Unknown parameters in the variable part are skipped, as
// ISO 8073 asks.
func Decode(b []byte) (TPDU, error) {
	var p TPDU
	if len(b) < 2 {
		return p, derr(0, ErrShort, "%d octets", len(b))
	}
	li := int(b[0])
	code := b[1]
	p.Type = Type(code & 0xF0)
	if p.Type != CR && p.Type != CC {
		p.Type = Type(code)
	}
	n, ok := fixed[p.Type]
	if !ok {
		return TPDU{}, derr(Type(code), ErrType, "code 0x%02x", code)
	}
	if li == 255 {
		return p, derr(p.Type, ErrLength, "LI 255 is reserved")
	}
	if li+1 > len(b) {
		return p, derr(p.Type, ErrLength, "LI %d, %d octets", li, len(b))
	}
	if li+1 < n {
		return p, derr(p.Type, ErrShort, "LI %d, fixed part %d", li, n-1)
	}
	hdr, data := b[:li+1], b[li+1:]
	p.DstRef = be.Uint16(hdr[2:])
	switch p.Type {
	case CR, CC:
		p.CDT = code & 0x0F
		p.SrcRef = be.Uint16(hdr[4:])
		p.Class = hdr[6]
	case DR:
		p.SrcRef = be.Uint16(hdr[4:])
		p.Reason = hdr[6]
	case DC:
		p.SrcRef = be.Uint16(hdr[4:])
	case DT, ED:
		v := be.Uint32(hdr[4:])
		p.EOT, p.Seq = v&0x80000000 != 0, v&MaxSeq
	case AK:
		v := be.Uint32(hdr[4:])
		if v&0x80000000 != 0 {
			return p, derr(p.Type, ErrValue, "YR-TU-NR bit 32 set")
		}
		p.Seq, p.Credit = v, be.Uint16(hdr[8:])
	case EA:
		v := be.Uint32(hdr[4:])
		if v&0x80000000 != 0 {
			return p, derr(p.Type, ErrValue, "YR-EDTU-NR bit 32 set")
		}
		p.Seq = v
	}
	for v := hdr[n:]; len(v) > 0; {
		if len(v) < 2 || int(v[1]) > len(v)-2 {
			return p, derr(p.Type, ErrParam, "truncated parameter at offset %d", len(hdr)-len(v))
		}
		code, val := v[0], v[2:2+int(v[1])]
		v = v[2+len(val):]
		switch {
		case code == ParamTPDUSize && (p.Type == CR || p.Type == CC):
			if len(val) != 1 || val[0] < 7 || val[0] > 13 {
				return p, derr(p.Type, ErrValue, "TPDU size parameter % x", val)
			}
			p.SizeLog = val[0]
		case code == ParamOptions && (p.Type == CR || p.Type == CC):
			if len(val) != 1 {
				return p, derr(p.Type, ErrParam, "option parameter of %d octets", len(val))
			}
			p.Options = val[0]
		case code == ParamSelective && p.Type == AK:
			if len(val) != 4 || val[0]&0x80 != 0 || p.HasSel {
				return p, derr(p.Type, ErrParam, "selective sequence number % x", val)
			}
			p.HasSel, p.Sel = true, be.Uint32(val)
		}
	}
	switch p.Type {
	case DT:
		p.Data = data
	case ED:
		if len(data) > MaxExpedited {
			return p, derr(p.Type, ErrTooLarge, "%d octets of expedited data, at most %d", len(data), MaxExpedited)
		}
		p.Data = data
	default:
		if len(data) > 0 {
			return p, derr(p.Type, ErrTooLarge, "%d octets after the header", len(data))
		}
	}
	return p, nil
}

// Append encodes p onto b. Fields that p's type does not carry are
// ignored; a zero SizeLog or Options leaves that parameter out.
func Append(b []byte, p TPDU) []byte {
	start := len(b)
	b = append(b, 0, byte(p.Type))
	b = be.AppendUint16(b, p.DstRef)
	switch p.Type {
	case CR, CC:
		b[start+1] |= p.CDT & 0x0F
		b = be.AppendUint16(b, p.SrcRef)
		b = append(b, p.Class)
		if p.SizeLog != 0 {
			b = append(b, ParamTPDUSize, 1, p.SizeLog)
		}
		if p.Options != 0 {
			b = append(b, ParamOptions, 1, p.Options)
		}
	case DR:
		b = be.AppendUint16(b, p.SrcRef)
		b = append(b, p.Reason)
	case DC:
		b = be.AppendUint16(b, p.SrcRef)
	case DT, ED:
		v := p.Seq & MaxSeq
		if p.EOT {
			v |= 0x80000000
		}
		b = be.AppendUint32(b, v)
	case AK:
		b = be.AppendUint32(b, p.Seq&MaxSeq)
		b = be.AppendUint16(b, p.Credit)
		if p.HasSel {
			b = append(b, ParamSelective, 4)
			b = be.AppendUint32(b, p.Sel&MaxSeq)
		}
	case EA:
		b = be.AppendUint32(b, p.Seq&MaxSeq)
	}
	b[start] = byte(len(b) - start - 1)
	if p.Type == DT || p.Type == ED {
		b = append(b, p.Data...)
	}
	return b
}

// Encode is Append onto a fresh slice.
func Encode(p TPDU) []byte { return Append(nil, p) }

// SizeLog is log2 of a valid TPDU size, or 0.
func SizeLog(size int) uint8 {
	for l := uint8(7); l <= 13; l++ {
		if 1<<l == size {
			return l
		}
	}
	return 0
}
