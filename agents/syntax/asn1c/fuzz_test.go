//go:build cgo

package asn1c

import (
	"os"
	"path/filepath"
	"testing"

	"protolab/agents/syntax/syntaxtest"
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
	f.Fuzz(func(t *testing.T, b []byte) { syntaxtest.DecodeRoundTrip(t, c, der, b) })
}

func FuzzDecodeBER(f *testing.F)    { fuzzDecoder(f, "ber", "skinny") }
func FuzzDecodeDER(f *testing.F)    { fuzzDecoder(f, "der", "der") }
func FuzzDecodeUPER(f *testing.F)   { fuzzDecoder(f, "uper", "uper") }
func FuzzDecodeSkinny(f *testing.F) { fuzzDecoder(f, "skinny", "skinny") }
