// Package syntaxtest holds what the transfer syntaxes' tests share.
package syntaxtest

import (
	"math"
	"reflect"
	"testing"

	"protolab/agents/syntax"
)

// DecodeRoundTrip is one fuzz input's check of decoder c: the decode must
// not crash and must fail with a reason, and what it accepts must encode
// with back and decode back to the same PDU (a NaN never equals itself, so
// a PDU holding one is let through).
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
	if got := reflect.ValueOf(q).Elem().Interface(); !reflect.DeepEqual(got, want) && !HasNaN(want) {
		t.Fatalf("%s: %s round trip changed the PDU\n got %+v\nwant %+v", c.Name(), back.Name(), got, want)
	}
}

// HasNaN: whether any float in v is a NaN.
func HasNaN(v any) bool {
	found := false
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Float32, reflect.Float64:
			found = found || math.IsNaN(v.Float())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(v))
	return found
}
