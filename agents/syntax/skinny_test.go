package syntax

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"protolab/agents/dis"
)

func TestRealEncoding(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want []byte // length and contents
	}{
		{0, []byte{0}},
		{math.Copysign(0, -1), []byte{1, 0x43}},
		{math.Inf(1), []byte{1, 0x40}},
		{1, []byte{3, 0x80, 0x00, 0x01}},
		{-0.5, []byte{3, 0xC0, 0xFF, 0x01}},
		{12.5, []byte{3, 0x80, 0xFF, 0x19}}, // 25 * 2^-1
		// DER (X.690 11.3.1): mantissa odd and in the fewest octets, where
		// asn1tools writes 80 ff 00 c9 and asn1c c0 ff 00 65
		{100.5, []byte{3, 0x80, 0xFF, 0xC9}},
		{-50.5, []byte{3, 0xC0, 0xFF, 0x65}},
		{1e300, nil},                       // two exponent octets: read back only
		{math.SmallestNonzeroFloat64, nil}, // subnormal: math.Ldexp's side of ldexp
		{-math.MaxFloat64, nil},
		{math.MaxFloat32, nil},
	} {
		got := appendReal(nil, tc.f)
		if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("REAL %g: % x, want % x", tc.f, got, tc.want)
		}
		r := fastReader{b: append([]byte{0x80}, got...), ok: true}
		if back := r.real(0x80); !r.ok || math.Float64bits(back) != math.Float64bits(tc.f) {
			t.Errorf("REAL %g: read back %g (ok %v)", tc.f, back, r.ok)
		}
	}
}

func TestSkinnyMatchesWithoutBer(t *testing.T) {
	// the fast path alone: a skinny codec whose fallback always fails
	s := preEncoded(1, failing{})
	for _, p := range Samples() {
		b, err := s.Append(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.prefix[p.Type()]); got != 16 {
			t.Errorf("%v: prefix is %d octets, want 16", p.Type(), got)
		}
		got, err := s.Decode(b)
		if err != nil {
			t.Fatalf("%v: % x: %v", p.Type(), b, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%v: round trip\n got %+v\nwant %+v", p.Type(), got, p)
		}
	}
	if s.stats.Matched != 10 || s.stats.Fallback != 0 {
		t.Errorf("stats %+v, want 10 matched", s.stats)
	}
	// another exercise: no match, the fallback runs
	es := Samples()[0]
	dis.PDU(es).(*dis.EntityStatePDU).Header.ExerciseID = 2
	b, _ := s.Append(nil, es)
	if _, err := s.Decode(b); err == nil || s.stats.Fallback != 1 {
		t.Errorf("exercise 2 matched exercise 1's prefix: %v %+v", err, s.stats)
	}
}

type failing struct{}

func (failing) Name() string                               { return "failing" }
func (failing) Stats() Stats                               { return Stats{} }
func (failing) Append(d []byte, _ dis.PDU) ([]byte, error) { return d, nil }
func (failing) Decode([]byte) (dis.PDU, error) {
	return nil, &DecodeError{Syntax: "failing", Reason: ReasonMalformed}
}

func TestComposition(t *testing.T) {
	want := map[dis.PDUType]Composition{ // the samples' records included
		dis.TypeEntityState:      {28 + 2*4, 15, 2 + 2},
		dis.TypeFire:             {6 + 12 + 1 + 11, 7, 0},
		dis.TypeDetonation:       {6 + 12 + 11 + 1 + 2*4, 9, 2},
		dis.TypeCollision:        {6 + 9 + 1, 7, 0},
		dis.TypeServiceRequest:   {6 + 6 + 1 + 2*7, 2, 0},
		dis.TypeResupplyOffer:    {6 + 6 + 2*7, 2, 0},
		dis.TypeResupplyReceived: {6 + 6 + 2*7, 2, 0},
		dis.TypeResupplyCancel:   {12, 0, 0},
		dis.TypeRepairComplete:   {13, 0, 0},
		dis.TypeRepairResponse:   {13, 0, 0},
	}
	for _, p := range Samples() {
		if got := Compose(p); got != want[p.Type()] {
			t.Errorf("%v: %+v, want %+v", p.Type(), got, want[p.Type()])
		}
	}
}

// The fast path against the reference matcher: on every sample, every
// truncation and single-octet change of it, and random multi-octet changes,
// both accept or both refuse, and what they accept is the same PDU.
func TestSkinnyFastPathMatchesReference(t *testing.T) {
	s := preEncoded(1, failing{})
	rng := rand.New(rand.NewPCG(15, 0))
	var n, matched int
	for _, p := range append(Samples(), extremes()...) {
		b, err := s.Append(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		check := func(m []byte) {
			n++
			ok, err := compareFastPath(s, m)
			if err != nil {
				t.Fatalf("%v: % x: %v", p.Type(), m, err)
			}
			if ok {
				matched++
			}
		}
		if ok, err := compareFastPath(s, b); !ok || err != nil {
			t.Fatalf("%v: % x: its own encoding: matched %v, %v", p.Type(), b, ok, err)
		}
		for i := len(s.prefix[p.Type()]); i < len(b); i++ {
			check(b[:i])
			for _, v := range []byte{b[i] ^ 1, b[i] ^ 0x80, b[i] + 1, b[i] - 1, 0, 0x7f, 0x80, 0x81, 0x82, 0xff} {
				m := bytes.Clone(b)
				m[i] = v
				check(m)
			}
		}
		for range 2000 {
			m := bytes.Clone(b)
			for range 1 + rng.IntN(4) {
				i := len(s.prefix[p.Type()]) + rng.IntN(len(b)-len(s.prefix[p.Type()]))
				m[i] = byte(rng.Uint32())
			}
			check(m)
		}
	}
	t.Logf("%d inputs, %d matched", n, matched)
	if matched <= len(Samples()) || matched == n {
		t.Errorf("%d of %d inputs matched: the mutations test only one side", matched, n)
	}
}

// extremes returns PDUs of every type whose integers are at their maxima,
// whose reals are special, subnormal or huge, and whose record lists are
// empty, short or long enough for a two-octet length.
func extremes() []dis.PDU {
	var out []dis.PDU
	for _, records := range []int{0, 3, 40} {
		for _, t := range dis.Types {
			p := dis.New(t)
			Walk(&filler{records: records}, p)
			h := HeaderOf(p)
			*h = dis.NewHeader(t, 1, math.MaxUint32)
			h.Length = uint16(p.Len())
			out = append(out, p)
		}
	}
	return out
}

// filler is an Archive that sets every value Walk visits.
type filler struct {
	records, n int
}

var fillerReals = []float64{math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1e-40, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, 0x1p-1022, 3000.125, -50.5, math.MaxFloat32}

func (f *filler) real() float64                 { f.n++; return fillerReals[f.n%len(fillerReals)] }
func (f *filler) Decoding() bool                { return true }
func (f *filler) Alt(t dis.PDUType) dis.PDUType { return t }
func (f *filler) Begin()                        {}
func (f *filler) End()                          {}
func (f *filler) U8(v *uint8)                   { *v = math.MaxUint8 }
func (f *filler) U16(v *uint16)                 { *v = math.MaxUint16 }
func (f *filler) U32(v *uint32)                 { *v = math.MaxUint32 }
func (f *filler) F32(v *float32)                { *v = float32(f.real()) }
func (f *filler) F64(v *float64)                { *v = f.real() }
func (f *filler) Records(int) int               { return f.records }
func (f *filler) Err() error                    { return nil }
func (f *filler) Octets(b []byte) {
	for i := range b {
		b[i] = 0xff
	}
}

// FuzzSkinnyFastPath: the same comparison on arbitrary bytes after a
// matching prefix.
func FuzzSkinnyFastPath(f *testing.F) {
	s := preEncoded(1, failing{})
	for _, p := range Samples() {
		b, _ := s.Append(nil, p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := compareFastPath(s, b); err != nil {
			t.Fatal(err)
		}
	})
}

// compareFastPath decodes b with the fast path and the reference matcher
// when b starts with a prefix of s, says whether they matched and how they
// differ.
func compareFastPath(s *skinny, b []byte) (bool, error) {
	if len(b) == 0 || b[0]&0xE0 != 0xA0 {
		return false, nil
	}
	t := dis.PDUType(b[0] &^ 0xA0)
	if !t.Known() || !bytes.HasPrefix(b, s.prefix[t]) {
		return false, nil
	}
	fast, ref := s.match(b, t), s.refMatch(b, t)
	switch {
	case (fast == nil) != (ref == nil):
		return false, fmt.Errorf("fast path matched %v, reference %v", fast != nil, ref != nil)
	case fast == nil:
		return false, nil
	}
	// the native encodings compare every field, NaN payloads included
	fb, err1 := dis.AppendMarshal(nil, fast)
	rb, err2 := dis.AppendMarshal(nil, ref)
	if err1 != nil || err2 != nil || !bytes.Equal(fb, rb) {
		return true, fmt.Errorf("fast path decoded\n%+v\nreference\n%+v (%v, %v)", fast, ref, err1, err2)
	}
	return true, nil
}

// refMatch is skinny's match as it was: Walk driving a berMatcher.
func (s *skinny) refMatch(b []byte, t dis.PDUType) dis.PDU {
	p := dis.New(t)
	h := s.header[t]
	var m berMatcher
	m.reset(b, len(s.prefix[t]), [4]uint8{h.ProtocolVersion, h.ExerciseID, uint8(t), uint8(h.ProtocolFamily)})
	Walk(&m, p)
	m.End()
	if m.ok && m.pos == len(b) && CheckHeader("skinny", p) == nil {
		return p
	}
	return nil
}

// berMatcher is the Walk-driven matcher skinny used before its fast path
// (skinny_fast.go), kept as the reference the fast path must agree with. It
// reads what berWriter writes, nothing else: ok turns false at the first
// octet it does not expect.
type berMatcher struct {
	b     []byte
	pos   int
	ok    bool
	pre   [4]uint8 // header values covered by the prefix
	npre  int
	stack []refLevel
	list  bool
	// inPrefix: the header's Begin is covered by the prefix too
	inPrefix bool
}

func (m *berMatcher) reset(b []byte, pos int, pre [4]uint8) {
	m.b, m.pos, m.ok, m.pre, m.npre, m.list, m.inPrefix = b, pos, true, pre, 0, false, true
	// the alternative is open (indefinite) and its component [0], the
	// header, is in the prefix
	m.stack = append(m.stack[:0], refLevel{start: -1, idx: 1})
}

func (m *berMatcher) Decoding() bool                { return true }
func (m *berMatcher) Err() error                    { return nil }
func (m *berMatcher) Alt(t dis.PDUType) dis.PDUType { return t }

func (m *berMatcher) expectTag(constructed bool) bool {
	if !m.ok || m.pos >= len(m.b) {
		m.ok = false
		return false
	}
	l := &m.stack[len(m.stack)-1]
	want := byte(0x30)
	if !l.seqOf {
		want = 0x80 | byte(l.idx)
		l.idx++
		if constructed {
			want |= 0x20
		}
	}
	if m.b[m.pos] != want {
		m.ok = false
		return false
	}
	m.pos++
	return true
}

// short reads a short-form length and checks the contents fit.
func (m *berMatcher) short() int {
	if m.pos >= len(m.b) || m.b[m.pos] >= 0x80 || m.pos+1+int(m.b[m.pos]) > len(m.b) {
		m.ok = false
		return -1
	}
	n := int(m.b[m.pos])
	m.pos++
	return n
}

func (m *berMatcher) Begin() {
	if m.inPrefix {
		m.inPrefix = false
		m.stack = append(m.stack, refLevel{start: -1, idx: 4})
		return
	}
	seqOf := m.list
	m.list = false
	if !m.expectTag(true) || m.pos >= len(m.b) {
		m.ok = false
		return
	}
	n, c := 0, m.b[m.pos]
	switch {
	case c < 0x80:
		n, m.pos = int(c), m.pos+1
	case c == 0x81 && m.pos+1 < len(m.b):
		n, m.pos = int(m.b[m.pos+1]), m.pos+2
	case c == 0x82 && m.pos+2 < len(m.b):
		n, m.pos = int(m.b[m.pos+1])<<8|int(m.b[m.pos+2]), m.pos+3
	default:
		m.ok = false
		return
	}
	if m.pos+n > len(m.b) {
		m.ok = false
		return
	}
	m.stack = append(m.stack, refLevel{start: m.pos, endPos: m.pos + n, seqOf: seqOf})
}

func (m *berMatcher) End() {
	if !m.ok {
		return
	}
	l := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	if l.start < 0 {
		if m.pos+2 > len(m.b) || m.b[m.pos] != 0 || m.b[m.pos+1] != 0 {
			m.ok = false
			return
		}
		m.pos += 2
		return
	}
	if m.pos != l.endPos {
		m.ok = false
	}
}

func (m *berMatcher) uint(max uint64) uint64 {
	if m.npre < 4 {
		m.npre++
		return uint64(m.pre[m.npre-1])
	}
	if !m.expectTag(false) {
		return 0
	}
	n := m.short()
	if n < 1 || n > 5 || m.b[m.pos]&0x80 != 0 {
		m.ok = false
		return 0
	}
	var v uint64
	for _, c := range m.b[m.pos : m.pos+n] {
		v = v<<8 | uint64(c)
	}
	m.pos += n
	if v > max {
		m.ok = false
	}
	return v
}

func (m *berMatcher) U8(v *uint8)   { *v = uint8(m.uint(math.MaxUint8)) }
func (m *berMatcher) U16(v *uint16) { *v = uint16(m.uint(math.MaxUint16)) }
func (m *berMatcher) U32(v *uint32) { *v = uint32(m.uint(math.MaxUint32)) }

func (m *berMatcher) real() float64 {
	if !m.expectTag(false) {
		return 0
	}
	n := m.short()
	if n <= 0 {
		return 0 // n == 0 is +0; n < 0 a mismatch (ok is false)
	}
	c := m.b[m.pos : m.pos+n]
	m.pos += n
	if n == 1 {
		switch c[0] {
		case 0x40:
			return math.Inf(1)
		case 0x41:
			return math.Inf(-1)
		case 0x42:
			return math.NaN()
		case 0x43:
			return math.Copysign(0, -1)
		}
		m.ok = false
		return 0
	}
	// binary, base 2, F = 0, exponent of 1 or 2 octets, mantissa < 2^53
	if c[0]&0xBC != 0x80 || c[0]&3 > 1 {
		m.ok = false
		return 0
	}
	en := int(c[0]&3) + 1
	if n < 1+en+1 || n-1-en > 7 {
		m.ok = false
		return 0
	}
	e := int(int8(c[1]))
	if en == 2 {
		e = int(int16(uint16(c[1])<<8 | uint16(c[2])))
	}
	var mant uint64
	for _, x := range c[1+en:] {
		mant = mant<<8 | uint64(x)
	}
	if mant == 0 || mant >= 1<<53 {
		m.ok = false
		return 0
	}
	f := math.Ldexp(float64(mant), e)
	if c[0]&0x40 != 0 {
		f = -f
	}
	return f
}

func (m *berMatcher) F32(v *float32) { *v = float32(m.real()) }
func (m *berMatcher) F64(v *float64) { *v = m.real() }

func (m *berMatcher) Octets(b []byte) {
	if !m.expectTag(false) {
		return
	}
	if n := m.short(); n != len(b) {
		m.ok = false
		return
	}
	copy(b, m.b[m.pos:])
	m.pos += len(b)
}

// Records counts the elements of the SEQUENCE OF that starts at pos.
func (m *berMatcher) Records(int) int {
	m.list = true
	if !m.ok {
		return 0
	}
	// tag, length (short or 81/82 form), then elements 30 LL ...
	p := m.pos + 1
	if p >= len(m.b) {
		m.ok = false
		return 0
	}
	end := 0
	switch c := m.b[p]; {
	case c < 0x80:
		end = p + 1 + int(c)
		p++
	case c == 0x81 && p+1 < len(m.b):
		end = p + 2 + int(m.b[p+1])
		p += 2
	case c == 0x82 && p+2 < len(m.b):
		end = p + 3 + (int(m.b[p+1])<<8 | int(m.b[p+2]))
		p += 3
	default:
		m.ok = false
		return 0
	}
	n := 0
	for p < end && p+1 < len(m.b) && m.b[p] == 0x30 && m.b[p+1] < 0x80 {
		p += 2 + int(m.b[p+1])
		n++
	}
	if p != end || n > dis.MaxRecords {
		m.ok = false
		return 0
	}
	return n
}

type refLevel struct {
	start  int  // offset of the contents (definite) or -1 (indefinite)
	idx    int  // next component number
	seqOf  bool // elements are UNIVERSAL 16
	endPos int  // end offset of a definite length
}
