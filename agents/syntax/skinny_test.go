package syntax

import (
	"math"
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
		{1e300, nil},                        // two exponent octets: read back only
	} {
		got := appendReal(nil, tc.f)
		if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("REAL %g: % x, want % x", tc.f, got, tc.want)
		}
		var m berMatcher
		m.b = append([]byte{0x80}, got...)
		m.ok = true
		m.npre = 4
		m.stack = []level{{start: -1}}
		if back := m.real(); !m.ok || math.Float64bits(back) != math.Float64bits(tc.f) {
			t.Errorf("REAL %g: read back %g (ok %v)", tc.f, back, m.ok)
		}
	}
}

func TestSkinnyMatchesWithoutBer(t *testing.T) {
	// the fast path alone: a skinny codec whose fallback always fails
	s := &skinny{ex: 1, fallback: failing{}}
	for _, typ := range dis.Types {
		var w berWriter
		w.alt(typ)
		w.Begin()
		h := dis.NewHeader(typ, 1, 0)
		pt, fam := uint8(typ), uint8(h.ProtocolFamily)
		w.U8(&h.ProtocolVersion)
		w.U8(&h.ExerciseID)
		w.U8(&pt)
		w.U8(&fam)
		s.prefix[typ] = w.b
	}
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
