package syntax

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// ParseReal reads what AppendRealContents writes, bit for bit, over special,
// subnormal, extreme and random values.
func TestRealContentsRoundTrip(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1, -1, 0.5, 100.5, -50.5, 1e300, -1e-300,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, math.MaxFloat32, 4500.5, 9.75}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		vals = append(vals, math.Float64frombits(r.Uint64()))
	}
	for _, f := range vals {
		c := AppendRealContents(nil, f)
		back, err := ParseReal(c)
		if err != nil {
			t.Fatalf("%g: % x: %v", f, c, err)
		}
		if math.IsNaN(f) {
			if !math.IsNaN(back) || len(c) != 1 || c[0] != 0x42 {
				t.Fatalf("NaN: % x read back %g", c, back)
			}
			continue
		}
		if math.Float64bits(back) != math.Float64bits(f) {
			t.Fatalf("%g: % x read back %g", f, c, back)
		}
		if len(c) > 0 && c[0]&0x80 != 0 && c[len(c)-1]&1 == 0 {
			t.Fatalf("%g: % x: DER's mantissa is odd", f, c)
		}
	}
}

// The forms other encoders may send (X.690 8.5): other bases, a scale
// factor, long exponents, long or non-minimal mantissas, decimal NR1..3.
func TestParseRealForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    []byte
		want float64
	}{
		{"asn1tools' zero octet before the mantissa (100.5)", []byte{0x80, 0xFF, 0x00, 0xC9}, 100.5},
		{"asn1c's zero octet after making it odd (-50.5)", []byte{0xC0, 0xFF, 0x00, 0x65}, -50.5},
		{"base 8: 3 x 8^2", []byte{0x90, 0x02, 0x03}, 192},
		{"base 16: 1 x 16^-1", []byte{0xA0, 0xFF, 0x01}, 0.0625},
		{"scale F = 2: 3 x 2^2 x 2^1", []byte{0x88, 0x01, 0x03}, 24},
		{"two exponent octets", []byte{0x81, 0x00, 0x01, 0x05}, 10},
		{"three exponent octets", []byte{0x82, 0xFF, 0xFF, 0xFF, 0x03}, 1.5},
		{"exponent with its own length", []byte{0x83, 0x01, 0x02, 0x01}, 4},
		{"a 9-octet mantissa", []byte{0x80, 0xB8, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x01}, math.Ldexp(1<<64+1, -72)},
		{"far beyond float64", []byte{0x81, 0x7F, 0xFF, 0x01}, math.Inf(1)},
		{"far below it", []byte{0xC1, 0x80, 0x00, 0x01}, math.Copysign(0, -1)},
		{"a zero mantissa", []byte{0xC0, 0x05, 0x00}, math.Copysign(0, -1)},
		{"NR1", append([]byte{0x01}, " -42"...), -42},
		{"NR2 with a comma", append([]byte{0x02}, "3,25"...), 3.25},
		{"NR3", append([]byte{0x03}, "+1.5E+3"...), 1500},
		{"NR3 beyond float64", append([]byte{0x03}, "1E999"...), math.Inf(1)},
		{"minus zero", []byte{0x43}, math.Copysign(0, -1)},
	} {
		got, err := ParseReal(tc.c)
		if err != nil || math.Float64bits(got) != math.Float64bits(tc.want) {
			t.Errorf("%s: % x read %g (%v), want %g", tc.name, tc.c, got, err, tc.want)
		}
	}
	for _, bad := range [][]byte{
		{0xB0, 0x00, 0x01},       // base 11: reserved
		{0x80, 0x01},             // no mantissa
		{0x83},                   // exponent length missing
		{0x83, 0x00, 0x01},       // an exponent of 0 octets
		{0x83, 0x09, 1, 2, 3, 4}, // 9 exponent octets
		{0x40, 0x00},             // a special value with more octets
		{0x44},                   // no such special value
		{0x04, '1'},              // no NR4
		append([]byte{0x01}, "12x"...),
		append([]byte{0x03}, "1e"...),
	} {
		if _, err := ParseReal(bad); !errors.Is(err, errReal) {
			t.Errorf("% x: %v, want a REAL error", bad, err)
		}
	}
}

func FuzzParseReal(f *testing.F) {
	f.Add([]byte{0x80, 0xFF, 0x00, 0xC9})
	f.Add([]byte{0x83, 0x02, 0x7F, 0xFF, 0x01})
	f.Add(append([]byte{0x03}, "1.5E3"...))
	f.Fuzz(func(t *testing.T, c []byte) {
		v, err := ParseReal(c)
		if err != nil {
			return
		}
		back, err := ParseReal(AppendRealContents(nil, v))
		if err != nil || (math.Float64bits(back) != math.Float64bits(v) && !math.IsNaN(v)) {
			t.Fatalf("% x read %g, its DER form read %g (%v)", c, v, back, err)
		}
	})
}
