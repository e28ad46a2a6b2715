//go:build cgo

package asn1c

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"protolab/agents/dis"
	"protolab/agents/syntax"
	"protolab/agents/syntax/syntaxtest"
)

func mustNew(t testing.TB, name string) syntax.Codec {
	t.Helper()
	c, err := syntax.New(name, syntax.Options{Exercise: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTripEveryType(t *testing.T) {
	for _, name := range []string{"ber", "der", "uper"} {
		c := mustNew(t, name)
		for _, p := range syntax.Samples() {
			b, err := c.Append(nil, p)
			if err != nil {
				t.Fatalf("%s %v: %v", name, p.Type(), err)
			}
			got, err := c.Decode(b)
			if err != nil {
				t.Fatalf("%s %v: decode %x: %v", name, p.Type(), b, err)
			}
			if !reflect.DeepEqual(got, p) {
				t.Errorf("%s %v: round trip\n got %+v\nwant %+v", name, p.Type(), got, p)
			}
		}
	}
}

func TestDecodeErrorsHaveReasons(t *testing.T) {
	der := mustNew(t, "der")
	ber := mustNew(t, "ber")
	es := syntax.Samples()[0]
	good, err := der.Append(nil, es)
	if err != nil {
		t.Fatal(err)
	}
	// the same PDU with the outer length indefinite: BER accepts, DER refuses
	indef := append([]byte{good[0], 0x80}, good[lenOctets(good[1:])+1:]...)
	indef = append(indef, 0, 0)
	if _, err := ber.Decode(indef); err != nil {
		t.Errorf("ber rejects an indefinite length: %v", err)
	}
	cases := []struct {
		name, codec, reason string
		in                  []byte
	}{
		{"indefinite in DER", "der", syntax.ReasonIndefinite, indef},
		{"unknown outer tag", "ber", syntax.ReasonUnknownTag, append([]byte{0xAB}, good[1:]...)},
		{"universal outer tag", "ber", syntax.ReasonUnknownTag, append([]byte{0x30}, good[1:]...)},
		{"truncated", "ber", syntax.ReasonTruncated, good[:len(good)-3]},
		{"trailing", "ber", syntax.ReasonTrailing, append(append([]byte{}, good...), 0)},
		{"garbage", "ber", syntax.ReasonMalformed, []byte{0xA1, 0x03, 0x05, 0x05, 0x05}},
		{"empty", "uper", syntax.ReasonTruncated, nil},
	}
	for _, tc := range cases {
		_, err := mustNew(t, tc.codec).Decode(tc.in)
		if got := syntax.Reason(err); got != tc.reason {
			t.Errorf("%s: reason %q (%v), want %q", tc.name, got, err, tc.reason)
		}
	}
}

// lenOctets is the number of length octets at b[0].
func lenOctets(b []byte) int {
	if b[0] < 0x80 {
		return 1
	}
	return 1 + int(b[0]&0x7f)
}

func TestConstraintAndHeaderChecks(t *testing.T) {
	ber := mustNew(t, "ber")
	// Resupply Cancel: header [0] { version 6, exercise 1, type 8, family 3, ts 0, length 24 }
	cancel := &dis.ResupplyCancelPDU{Header: dis.NewHeader(dis.TypeResupplyCancel, 1, 0)}
	b, err := ber.Append(nil, cancel)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resupply cancel DER: %s", hex.EncodeToString(b))
	// exercise id 1 -> 300 (02 01 01 -> 02 02 01 2c), lengths patched
	bad := patch(t, b, []byte{0x81, 0x01, 0x01}, []byte{0x81, 0x02, 0x01, 0x2c})
	if _, err := ber.Decode(bad); syntax.Reason(err) != syntax.ReasonConstraint {
		t.Errorf("exercise 300: %v, want reason constraint", err)
	}
	// length field 24 -> 25
	bad = patch(t, b, []byte{0x85, 0x01, 0x18}, []byte{0x85, 0x01, 0x19})
	if _, err := ber.Decode(bad); syntax.Reason(err) != syntax.ReasonHeader {
		t.Errorf("length 25: %v, want reason header-mismatch", err)
	}
}

// patch replaces old by new in a DER PDU whose constructed lengths are all
// short-form, fixing the two enclosing lengths (alternative and header).
func patch(t *testing.T, b, old, new []byte) []byte {
	t.Helper()
	i := bytesIndex(b, old)
	if i < 0 {
		t.Fatalf("%x not in %x", old, b)
	}
	out := append(append(append([]byte{}, b[:i]...), new...), b[i+len(old):]...)
	d := byte(len(new) - len(old))
	out[1] += d // alternative
	out[3] += d // header
	return out
}

func bytesIndex(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

// TestSkinny: skinny's output is BER that asn1c decodes to the same PDU;
// with every length definite it is byte for byte asn1c's DER.
func TestSkinny(t *testing.T) {
	ber, der := mustNew(t, "ber"), mustNew(t, "der")
	sk := mustNew(t, "skinny")
	for _, p := range syntax.Samples() {
		b, err := sk.Append(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ber.Decode(b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%v: asn1c's BER decode of skinny % x: %v", p.Type(), b, err)
		}
		if _, err := der.Decode(b); syntax.Reason(err) != syntax.ReasonIndefinite {
			t.Errorf("%v: DER accepted skinny's indefinite lengths: %v", p.Type(), err)
		}
		if got, err := sk.Decode(b); err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%v: skinny round trip: %v", p.Type(), err)
		}
		want, _ := der.Append(nil, p)
		// asn1c 0.9.28 puts zero octets before some REAL mantissas (as does
		// asn1tools, differently): compare only the PDUs without REALs
		if def := syntax.DefiniteBER(p); syntax.Compose(p).Reals == 0 && !bytes.Equal(def, want) {
			t.Errorf("%v: skinny writer, definite lengths\n % x\nasn1c DER\n % x", p.Type(), def, want)
		}
		// asn1c's DER is valid BER but not skinny's form: the general parse
		if got, err := sk.Decode(want); err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%v: skinny fallback on DER: %v", p.Type(), err)
		}
	}
	if st := sk.Stats(); st.Matched != 10 || st.Fallback != 10 {
		t.Errorf("skinny stats %+v, want 10 matched and 10 fallbacks", st)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/crosscheck from the current codecs")

// TestCrosscheckFixtures keeps testdata/crosscheck/<type>.<syntax> equal to
// what the codecs produce for syntax.Samples(); the second implementation
// (asn1tools, protolab/tests/unit/test_asn1_crosscheck.py) reads them.
func TestCrosscheckFixtures(t *testing.T) {
	dir := filepath.Join("..", "testdata", "crosscheck")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"raw", "der", "uper", "skinny"} {
		c := mustNew(t, name)
		for _, p := range syntax.Samples() {
			b, err := c.Append(nil, p)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, strings.ReplaceAll(strings.ToLower(p.Type().String()), " ", "-")+"."+name)
			if *update {
				if err := os.WriteFile(f, b, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(f)
			if err != nil || !bytes.Equal(b, want) {
				t.Errorf("%s differs from the %s encoding (%v): go test ./syntax/asn1c -run Fixtures -update", f, name, err)
			}
		}
	}
}

func TestDecodeAfterReuse(t *testing.T) {
	for _, name := range []string{"ber", "der", "uper", "skinny"} {
		syntaxtest.DecodeAfterReuse(t, mustNew(t, name), mustNew(t, "der"))
	}
}
