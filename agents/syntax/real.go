package syntax

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	mbits "math/bits"
	"strconv"
	"strings"
)

// AppendRealContents appends the contents octets of a REAL (X.690 8.5) in
// DER's form (11.3.1): base 2, F = 0, odd mantissa, minimal exponent and
// mantissa octets; +0 has none. PER (X.691 15) carries REAL as exactly these
// octets (CER's, which are DER's) behind a length determinant.
func AppendRealContents(b []byte, f float64) []byte {
	switch {
	case f == 0 && !math.Signbit(f):
		return b
	case f == 0:
		return append(b, 0x43)
	case math.IsInf(f, 1):
		return append(b, 0x40)
	case math.IsInf(f, -1):
		return append(b, 0x41)
	case math.IsNaN(f):
		return append(b, 0x42)
	}
	bits := math.Float64bits(f)
	first := byte(0x80)
	if bits>>63 != 0 {
		first |= 0x40
	}
	e := int(bits >> 52 & 0x7ff)
	m := bits & (1<<52 - 1)
	if e == 0 {
		e = 1
	} else {
		m |= 1 << 52
	}
	e -= 1075
	tz := mbits.TrailingZeros64(m)
	m >>= tz
	e += tz
	mn := (mbits.Len64(m) + 7) / 8
	if e >= -128 && e <= 127 {
		b = append(b, first, byte(int8(e)))
	} else {
		b = append(b, first|1, byte(uint16(int16(e))>>8), byte(int16(e)))
	}
	for i := mn - 1; i >= 0; i-- {
		b = append(b, byte(m>>(8*i)))
	}
	return b
}

// appendReal appends the length and contents of a REAL in DER's form (BER's
// definite length: the contents are at most 10 octets).
func appendReal(b []byte, f float64) []byte {
	n := len(b)
	b = AppendRealContents(append(b, 0), f)
	b[n] = byte(len(b) - n - 1)
	return b
}

var errReal = errors.New("REAL")

// ParseReal reads the contents octets of any REAL X.690 8.5 allows: +0 (no
// octets), the special values, binary with base 2, 8 or 16, a scale factor F
// and an exponent of 1..3 octets or a stated length (up to 8 octets), and
// decimal in ISO 6093 forms NR1, NR2 and NR3. A value beyond float64's range
// reads as an infinity or zero, rounded to nearest as strconv and big.Float do.
func ParseReal(c []byte) (float64, error) {
	if len(c) == 0 {
		return 0, nil
	}
	switch first := c[0]; {
	case first&0x80 != 0:
		return parseBinaryReal(c)
	case first&0xC0 == 0x40:
		if len(c) != 1 {
			return 0, fmt.Errorf("%w: special value 0x%02x followed by %d octets", errReal, first, len(c)-1)
		}
		switch first {
		case 0x40:
			return math.Inf(1), nil
		case 0x41:
			return math.Inf(-1), nil
		case 0x42:
			return math.NaN(), nil
		case 0x43:
			return math.Copysign(0, -1), nil
		}
		return 0, fmt.Errorf("%w: unknown special value 0x%02x", errReal, first)
	default:
		return parseDecimalReal(c)
	}
}

func parseBinaryReal(c []byte) (float64, error) {
	first := c[0]
	shift := [4]int{1, 3, 4, 0}[first>>4&3] // log2 of the base: 2, 8, 16
	if first>>4&3 == 3 {
		return 0, fmt.Errorf("%w: reserved base (0x%02x)", errReal, first)
	}
	scale := int(first >> 2 & 3)
	pos, en := 1, int(first&3)+1
	if first&3 == 3 {
		if len(c) < 2 {
			return 0, fmt.Errorf("%w: exponent length missing", errReal)
		}
		pos, en = 2, int(c[1])
	}
	if en == 0 || en > 8 || len(c) < pos+en+1 {
		return 0, fmt.Errorf("%w: %d exponent octets in %d contents octets", errReal, en, len(c))
	}
	var e int64
	for i, x := range c[pos : pos+en] {
		if i == 0 {
			e = int64(int8(x))
		} else {
			e = e<<8 | int64(x)
		}
	}
	mant := c[pos+en:]
	if e > 1<<40 || e < -(1<<40) { // beyond any float64 whatever the mantissa: saturate before scaling
		e = max(min(e, 1<<40), -(1 << 40))
	}
	exp2 := e*int64(shift) + int64(scale)
	if len(mant) <= 8 {
		var m uint64
		for _, x := range mant {
			m = m<<8 | uint64(x)
		}
		if m == 0 {
			return math.Copysign(0, sign(first)), nil
		}
		if m < 1<<53 && exp2 > -2000 && exp2 < 2000 {
			return ldexp(m, int(exp2), first&0x40 != 0), nil
		}
	}
	if exp2 < -(1<<20) || exp2 > 1<<20 { // far beyond float64: big.Float's exponent is an int32
		if allZero(mant) {
			return math.Copysign(0, sign(first)), nil
		}
		if exp2 < 0 {
			return math.Copysign(0, sign(first)), nil
		}
		return math.Inf(int(sign(first))), nil
	}
	f := new(big.Float).SetInt(new(big.Int).SetBytes(mant))
	f.SetMantExp(f, int(exp2))
	v, _ := f.Float64()
	return math.Copysign(v, sign(first)), nil
}

func sign(first byte) float64 {
	if first&0x40 != 0 {
		return -1
	}
	return 1
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func parseDecimalReal(c []byte) (float64, error) {
	form := c[0] & 0x3F
	if c[0]&0xC0 != 0 || form < 1 || form > 3 {
		return 0, fmt.Errorf("%w: 0x%02x is no REAL form", errReal, c[0])
	}
	s := strings.TrimLeft(string(c[1:]), " ")
	for _, r := range s {
		if !strings.ContainsRune("0123456789+-.,Ee", r) {
			return 0, fmt.Errorf("%w: decimal NR%d %q", errReal, form, s)
		}
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", "."), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%w: decimal NR%d %q", errReal, form, s)
	}
	return v, nil
}
