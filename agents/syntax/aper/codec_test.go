package aper

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	fa "github.com/free5gc/aper"

	"protolab/agents/dis"
	"protolab/agents/syntax"
	"protolab/agents/syntax/syntaxtest"
)

func mustNew(t testing.TB) syntax.Codec {
	t.Helper()
	c, err := syntax.New("per", syntax.Options{Exercise: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kebab(t dis.PDUType) string { return strings.ReplaceAll(strings.ToLower(t.String()), " ", "-") }

func TestRoundTripEveryType(t *testing.T) {
	c := mustNew(t)
	for _, p := range syntax.Samples() {
		b, err := c.Append(nil, p)
		if err != nil {
			t.Fatalf("%v: %v", p.Type(), err)
		}
		got, err := c.Decode(b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%v: %v\n got %+v\nwant %+v", p.Type(), err, got, p)
		}
		// the CHOICE index (4 bits: ten alternatives) leads: type - 1 in the top nibble
		if b[0]>>4 != byte(p.Type()-1) {
			t.Errorf("%v: first octet %02x, want the CHOICE index %d in its top 4 bits", p.Type(), b[0], p.Type()-1)
		}
	}
}

// Records up to DIS's 255, reused structs across decodes of different sizes.
func TestRecords(t *testing.T) {
	c := mustNew(t)
	es := syntax.Samples()[0].(*dis.EntityStatePDU)
	for _, k := range []int{0, 255, 3} {
		p := *es
		p.ArticulationParameters = make([]dis.ArticulationParameter, k)
		for i := range p.ArticulationParameters {
			p.ArticulationParameters[i] = dis.ArticulationParameter{PartAttachedTo: uint16(i), ParameterType: 4096, Value: uint64(i) << 40}
		}
		p.Header.Length = uint16(p.Len())
		b, err := c.Append(nil, &p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%d records: %v", k, err)
		}
		g := *got.(*dis.EntityStatePDU)
		if k == 0 { // no records: nil or empty, as the decoder's reused struct has it
			g.ArticulationParameters, p.ArticulationParameters = nil, nil
		}
		if !reflect.DeepEqual(g, p) {
			t.Fatalf("%d records: got %+v", k, g)
		}
	}
}

func TestDecodeErrorsHaveReasons(t *testing.T) {
	c := mustNew(t)
	es, err := c.Append(nil, syntax.Samples()[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte{}, es...)
	bad[0] = 0xF0 // CHOICE index 15: no alternative
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, syntax.ReasonTruncated},
		{"cut short", es[:len(es)/2], syntax.ReasonTruncated},
		{"one octet too many", append(append([]byte{}, es...), 0), syntax.ReasonTrailing},
		{"no such alternative", bad, syntax.ReasonUnknownTag},
		{"too large", make([]byte, 4*dis.MaxPDUSize+1), syntax.ReasonTooLarge},
	} {
		_, err := c.Decode(tc.b)
		if got := syntax.Reason(err); got != tc.want {
			t.Errorf("%s: %v (reason %q), want %q", tc.name, err, got, tc.want)
		}
	}
	// the header's length field must be the native size, as for every syntax
	cd := c.(*codec)
	if _, err := cd.Decode(es); err != nil {
		t.Fatal(err)
	}
	cd.dec.EntityState.Header.Length++ // re-encode a PDU whose header lies about its length
	lying, err := fa.MarshalWithParams(cd.dec, choiceUB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(lying); syntax.Reason(err) != syntax.ReasonHeader {
		t.Errorf("a header length off by one: %v, want reason %s", err, syntax.ReasonHeader)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/crosscheck/*.per from this codec")

// TestCrosscheckFixtures keeps testdata/crosscheck/<type>.per equal to this
// codec's encoding of syntax.Samples(); asn1tools decodes them
// (protolab/tests/unit/test_asn1_crosscheck.py).
func TestCrosscheckFixtures(t *testing.T) {
	c := mustNew(t)
	for _, p := range syntax.Samples() {
		b, err := c.Append(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join("..", "testdata", "crosscheck", kebab(p.Type())+".per")
		if *update {
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if want, err := os.ReadFile(f); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s differs from the per encoding (%v): go test ./syntax/aper -run Fixtures -update", f, err)
		}
	}
}

// TestDecodesAsn1tools: asn1tools' aligned PER of the samples
// (testdata/asn1tools/<type>.per) decodes back to each sample, and equals
// ours octet for octet but for REAL contents, where asn1tools writes a zero
// octet before a mantissa whose top bit is set (see ../asn1c/doc.go).
func TestDecodesAsn1tools(t *testing.T) {
	c := mustNew(t)
	for _, p := range syntax.Samples() {
		f := filepath.Join("..", "testdata", "asn1tools", kebab(p.Type())+".per")
		theirs, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%v (write them: .venv/bin/python protolab/tests/unit/test_asn1_crosscheck.py)", err)
		}
		got, err := c.Decode(theirs)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s: decode of asn1tools' aligned PER: %v\n got %+v\nwant %+v", f, err, got, p)
		}
		ours, _ := c.Append(nil, p)
		if !bytes.Equal(ours, theirs) {
			t.Logf("%s: ours %d octets, asn1tools' %d (REAL contents)", kebab(p.Type()), len(ours), len(theirs))
		}
	}
}

func TestDecodeAfterReuse(t *testing.T) { syntaxtest.DecodeAfterReuse(t, mustNew(t), mustNew(t)) }
