// Package syntaxtest holds what the transfer syntaxes' tests share.
package syntaxtest

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"protolab/agents/dis"
	"protolab/agents/syntax"
)

// samePDU is what "the same PDU" means to a round trip: equal field by
// field, where a NaN equals a NaN and an empty list equals a nil one. A
// decoder reuses its PDUs, so a list that held records in an earlier decode
// comes back empty, not nil; the wire cannot tell the two apart.
var samePDU = cmp.Options{cmpopts.EquateNaNs(), cmpopts.EquateEmpty()}

// DecodeRoundTrip is one fuzz input's check of decoder c: the decode must
// not crash and must fail with a reason, and what it accepts must encode
// with back and decode back to the same PDU.
func DecodeRoundTrip(t *testing.T, c, back syntax.Codec, b []byte) {
	t.Helper()
	p, err := c.Decode(b)
	if err != nil {
		if syntax.Reason(err) == "" {
			t.Fatalf("error without a reason: %v", err)
		}
		return
	}
	enc, err := back.Append(nil, p)
	if err != nil {
		t.Fatalf("decoded %v does not encode in %s: %v", p.Type(), back.Name(), err)
	}
	want := reflect.ValueOf(p).Elem().Interface()
	q, err := back.Decode(enc)
	if err != nil {
		t.Fatalf("%s of a decoded %v does not decode: %v", back.Name(), p.Type(), err)
	}
	if d := cmp.Diff(want, reflect.ValueOf(q).Elem().Interface(), samePDU); d != "" {
		t.Fatalf("%s: %s round trip changed the PDU (-want +got):\n%s", c.Name(), back.Name(), d)
	}
}

// DecodeAfterReuse: c decodes a PDU with records into the PDU it reuses,
// then the same PDU with none; the second must pass DecodeRoundTrip with back,
// which has not seen the first. (CI's fuzzer found this order: c's list came
// back empty, back's nil, and the check called them different PDUs.)
func DecodeAfterReuse(t *testing.T, c, back syntax.Codec) {
	t.Helper()
	for _, p := range syntax.Samples() {
		rr, ok := p.(*dis.ResupplyReceivedPDU)
		if !ok {
			continue
		}
		none := *rr
		none.Supplies = nil
		none.Header.Length = uint16(none.Len())
		b, err := c.Append(nil, rr)
		if err == nil {
			_, err = c.Decode(b)
		}
		if err != nil {
			t.Fatalf("%s %v with records: %v", c.Name(), rr.Type(), err)
		}
		if b, err = c.Append(nil, &none); err != nil {
			t.Fatalf("%s %v without records: %v", c.Name(), rr.Type(), err)
		}
		DecodeRoundTrip(t, c, back, b)
		return
	}
	t.Fatal("no ResupplyReceived PDU among the samples")
}
