//go:build cgo

package asn1c

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"protolab/agents/syntax"
)

// One fuzz target per decoder (make fuzz gives these 30 s each,
// FUZZTIME_SYNTAX). A decode must not crash, must fail with a reason, and
// what it accepts must survive a DER round trip unchanged.

func fuzzDecoder(f *testing.F, name, suffix string) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "crosscheck", "*."+suffix))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	c := mustNew(f, name)
	der := mustNew(f, "der")
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := c.Decode(b)
		if err != nil {
			if syntax.Reason(err) == "" {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		enc, err := der.Append(nil, p)
		if err != nil {
			t.Fatalf("decoded %v does not encode: %v", p.Type(), err)
		}
		want := reflect.ValueOf(p).Elem().Interface()
		back, err := der.Decode(enc)
		if err != nil {
			t.Fatalf("DER of a decoded %v does not decode: %v", p.Type(), err)
		}
		if got := reflect.ValueOf(back).Elem().Interface(); !reflect.DeepEqual(got, want) && !hasNaN(enc) {
			t.Fatalf("%s: DER round trip changed the PDU\n got %+v\nwant %+v", name, got, want)
		}
	})
}

// hasNaN: a REAL NaN (contents 42) decodes to a NaN that DeepEqual never equals.
func hasNaN(b []byte) bool {
	for i := 0; i+2 < len(b); i++ {
		if b[i+1] == 1 && b[i+2] == 0x42 {
			return true
		}
	}
	return false
}

func FuzzDecodeBER(f *testing.F)    { fuzzDecoder(f, "ber", "skinny") }
func FuzzDecodeDER(f *testing.F)    { fuzzDecoder(f, "der", "der") }
func FuzzDecodeUPER(f *testing.F)   { fuzzDecoder(f, "uper", "uper") }
func FuzzDecodeSkinny(f *testing.F) { fuzzDecoder(f, "skinny", "skinny") }
