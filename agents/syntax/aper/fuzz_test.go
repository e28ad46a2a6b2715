package aper

import (
	"os"
	"path/filepath"
	"testing"

	"protolab/agents/syntax/syntaxtest"
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
	f.Fuzz(func(t *testing.T, b []byte) { syntaxtest.DecodeRoundTrip(t, c, back, b) })
}
