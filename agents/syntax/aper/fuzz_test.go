package aper

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"protolab/agents/syntax"
)

// FuzzDecodePER (make fuzz gives it 30 s): a decode never crashes, fails
// with a reason, and what it accepts re-encodes and decodes to the same PDU.
func FuzzDecodePER(f *testing.F) {
	for _, dir := range []string{"crosscheck", "asn1tools"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.per"))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	c, back := mustNew(f), mustNew(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := c.Decode(b)
		if err != nil {
			if syntax.Reason(err) == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		enc, err := back.Append(nil, p)
		if err != nil {
			t.Fatalf("decoded %v does not encode: %v", p.Type(), err)
		}
		want := reflect.ValueOf(p).Elem().Interface()
		q, err := back.Decode(enc)
		if err != nil {
			t.Fatalf("per of a decoded %v does not decode: %v", p.Type(), err)
		}
		if got := reflect.ValueOf(q).Elem().Interface(); !reflect.DeepEqual(got, want) && !hasNaN(want) {
			t.Fatalf("round trip changed the PDU\n got %+v\nwant %+v", got, want)
		}
	})
}

// hasNaN: a NaN never DeepEquals itself.
func hasNaN(v any) bool {
	found := false
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Float32, reflect.Float64:
			found = found || math.IsNaN(v.Float())
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
