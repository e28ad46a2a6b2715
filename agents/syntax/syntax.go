package syntax

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"protolab/agents/dis"
)

// Codec is one transfer syntax. A Codec is not safe for concurrent use: it
// owns the PDU structs Decode returns (reused by the next call of the same
// type) and its counters.
type Codec interface {
	// Name is the registered name ("raw", "ber", ...).
	Name() string
	// Append appends p's encoding to dst. The header's PDU type and length
	// fields are taken from p.Type() and p.Len(), as dis.PDU.MarshalTo does.
	Append(dst []byte, p dis.PDU) ([]byte, error)
	// Decode decodes one PDU filling all of b. Errors are *DecodeError.
	Decode(b []byte) (dis.PDU, error)
	// Stats reports the skinny match counters (zero for the others).
	Stats() Stats
}

// Stats counts how skinny decodes went: Matched took the pre-encoded fast
// path, Fallback went to the general BER parse.
type Stats struct {
	Matched  uint64 `json:"matched"`
	Fallback uint64 `json:"fallback"`
}

// Options configure a codec instance.
type Options struct {
	// Exercise is the DIS exercise id whose invariant octets skinny
	// pre-encodes (the header's exercise id field).
	Exercise uint8
}

// Reasons a decode fails: a small fixed set, usable as a metric label.
const (
	ReasonMalformed  = "malformed"         // the decoder failed
	ReasonTruncated  = "truncated"         // it wanted more bytes
	ReasonTrailing   = "trailing-bytes"    // bytes after the PDU
	ReasonConstraint = "constraint"        // a value outside the module's ranges
	ReasonUnknownTag = "unknown-tag"       // the outer tag is no DISPDU alternative
	ReasonIndefinite = "indefinite-length" // DER: indefinite length (BER accepts it)
	ReasonNotDER     = "not-der"           // DER: valid BER, not the DER encoding
	ReasonHeader     = "header-mismatch"   // the header's type or length field disagrees with the PDU
	ReasonNative     = "native"            // raw: dis.Decode failed (the wrapped *dis.Error says why)
	ReasonTooLarge   = "too-large"         // more records or bytes than DIS allows
	ReasonInternal   = "internal"          // value stream overflow or allocation failure
)

// Reasons lists every decode failure reason.
var Reasons = []string{ReasonMalformed, ReasonTruncated, ReasonTrailing, ReasonConstraint,
	ReasonUnknownTag, ReasonIndefinite, ReasonNotDER, ReasonHeader, ReasonNative,
	ReasonTooLarge, ReasonInternal}

// DecodeError is a failed decode: the syntax, a Reason and the detail.
type DecodeError struct {
	Syntax string
	Reason string
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Err != nil {
		return e.Syntax + " decode: " + e.Reason + ": " + e.Err.Error()
	}
	return e.Syntax + " decode: " + e.Reason
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Reason returns err's reason, "" when err is no *DecodeError.
func Reason(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

type entry struct {
	doc         string
	new         func(Options) (Codec, error)
	unavailable string
}

var registry = map[string]entry{}

// Register adds a transfer syntax; each codec's file calls it from init.
func Register(name, doc string, newCodec func(Options) (Codec, error)) {
	if _, dup := registry[name]; dup {
		panic("syntax: " + name + " registered twice")
	}
	registry[name] = entry{doc: doc, new: newCodec}
}

// RegisterUnavailable names a syntax this binary cannot offer and why.
func RegisterUnavailable(name, doc, why string) {
	if _, dup := registry[name]; dup {
		panic("syntax: " + name + " registered twice")
	}
	registry[name] = entry{doc: doc, unavailable: why}
}

// New returns a fresh codec of the named syntax; an unknown name fails
// listing the known ones, an unavailable one says why.
func New(name string, o Options) (Codec, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown transfer syntax %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if e.new == nil {
		return nil, fmt.Errorf("transfer syntax %q is not available in this binary: %s", name, e.unavailable)
	}
	return e.new(o)
}

// Names lists the registered syntaxes, available or not, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Available lists the syntaxes this binary can encode and decode.
func Available() []string {
	var out []string
	for _, n := range Names() {
		if registry[n].new != nil {
			out = append(out, n)
		}
	}
	return out
}

// Describe returns one line per syntax: name, doc, and why not when unavailable.
func Describe() string {
	var b strings.Builder
	for _, n := range Names() {
		e := registry[n]
		fmt.Fprintf(&b, "  %-11s %s", n, e.doc)
		if e.new == nil {
			fmt.Fprintf(&b, " (unavailable: %s)", e.unavailable)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
