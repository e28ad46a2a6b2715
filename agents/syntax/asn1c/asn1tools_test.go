//go:build cgo

package asn1c

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"protolab/agents/syntax"
)

// TestDecodesAsn1tools is the cross-check the other way round: asn1c
// decodes the second implementation's bytes. testdata/asn1tools/<type>.<rules>
// are asn1tools' DER, BER and UPER of syntax.Samples()
// (protolab/tests/unit/test_asn1_crosscheck.py writes them and keeps them
// current); each must decode back to its sample.
//
// The two DER encoders differ on some REALs, and neither is always DER:
// X.690 11.3.1 wants the mantissa in the fewest octets, asn1tools 0.169.0
// writes a zero octet before a mantissa whose top bit is set (100.5: 80 ff
// 00 c9), asn1c 0.9.28 one where making the mantissa odd empties its first
// octet (-50.5: c0 ff 00 65), and only skinny's writer (syntax.DefiniteBER,
// TestRealEncoding) is minimal (80 ff c9, c0 ff 65); see doc.go. Where
// asn1tools' DER is not asn1c's, asn1c's der syntax (which re-encodes and
// compares) refuses it as not-der, and its ber syntax reads it.
func TestDecodesAsn1tools(t *testing.T) {
	dir := filepath.Join("..", "testdata", "asn1tools")
	rules := []string{"der", "ber", "uper"}
	codecs := map[string]syntax.Codec{}
	for _, r := range rules {
		codecs[r] = mustNew(t, r)
	}
	for _, p := range syntax.Samples() {
		kind := kebab(p.Type())
		theirs := map[string][]byte{}
		for _, r := range rules {
			b, err := os.ReadFile(filepath.Join(dir, kind+"."+r))
			if err != nil {
				t.Fatalf("%v (write them: .venv/bin/python protolab/tests/unit/test_asn1_crosscheck.py)", err)
			}
			theirs[r] = b
		}
		ours, err := codecs["der"].Append(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		canonical := bytes.Equal(ours, theirs["der"])
		if !canonical {
			t.Logf("%s: asn1c's DER (%d octets) is not asn1tools' (%d)", kind, len(ours), len(theirs["der"]))
		}
		for _, r := range rules {
			got, err := codecs[r].Decode(theirs[r])
			if r == "der" && !canonical {
				if syntax.Reason(err) != syntax.ReasonNotDER {
					t.Errorf("%s: asn1c's der decode of asn1tools' DER: %v, want reason %s", kind, err, syntax.ReasonNotDER)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, p) {
				t.Errorf("%s: asn1c's %s decode of asn1tools' bytes: %v\n got %+v\nwant %+v", kind, r, err, got, p)
			}
		}
	}
}
