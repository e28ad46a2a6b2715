package dis

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error returned by this package is an *Error that
// wraps exactly one of these, so callers test the class with errors.Is and
// get the PDU type, field and offset with errors.As.
var (
	// ErrShort: the input ends before the PDU does (truncated datagram), or
	// the output buffer given to MarshalTo is smaller than Len().
	ErrShort = errors.New("short buffer")
	// ErrUnknownType: the header's PDU type is not one of the ten types
	// this package implements.
	ErrUnknownType = errors.New("unknown PDU type")
	// ErrWrongType: UnmarshalBinary was given a PDU of another type than
	// the receiver (e.g. Fire bytes into an *EntityStatePDU).
	ErrWrongType = errors.New("PDU type does not match receiver")
	// ErrLength: the header's length field disagrees with the number of
	// bytes given, or with the size the PDU's record counts imply.
	ErrLength = errors.New("length mismatch")
	// ErrCount: a record count (articulation parameters, supply types)
	// cannot be encoded (more than 255) or does not fit the PDU's length.
	ErrCount = errors.New("record count inconsistent")
	// ErrTooLarge: the PDU is longer than MaxPDUSize.
	ErrTooLarge = errors.New("PDU larger than maximum size")
)

// Error describes a failure to decode or encode one PDU.
type Error struct {
	Op     string  // "decode" or "encode"
	Type   PDUType // the PDU type concerned; 0 when not known yet
	Field  string  // the field concerned, e.g. "number of articulation parameters"
	Offset int     // byte offset of Field from the start of the PDU; -1 if none
	Detail string  // human-readable specifics (sizes, counts)
	Err    error   // one of the sentinel errors above
}

func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("dis: ")
	sb.WriteString(e.Op)
	if e.Type != 0 {
		sb.WriteByte(' ')
		sb.WriteString(e.Type.String())
		sb.WriteString(" PDU")
	}
	if e.Field != "" {
		sb.WriteString(": field ")
		sb.WriteString(strconv.Quote(e.Field))
		if e.Offset >= 0 {
			sb.WriteString(" at offset ")
			sb.WriteString(strconv.Itoa(e.Offset))
		}
	}
	if e.Detail != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Detail)
	}
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

// Unwrap returns the sentinel error, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

func decodeErr(t PDUType, field string, off int, sentinel error, detail string) error {
	return &Error{Op: "decode", Type: t, Field: field, Offset: off, Detail: detail, Err: sentinel}
}

func encodeErr(t PDUType, field string, off int, sentinel error, detail string) error {
	return &Error{Op: "encode", Type: t, Field: field, Offset: off, Detail: detail, Err: sentinel}
}

func itoa(n int) string { return strconv.Itoa(n) }
