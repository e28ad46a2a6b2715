package tp4

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

func samples() []TPDU {
	return []TPDU{
		{Type: CR, SrcRef: 0x1234, Class: ClassOption, SizeLog: 10, Options: OptExpedited | OptSelective},
		{Type: CR, SrcRef: 1, Class: ClassOption},
		{Type: CC, CDT: 12, DstRef: 0x1234, SrcRef: 0x4321, Class: ClassOption, SizeLog: 7, Options: OptExpedited},
		{Type: DR, DstRef: 7, SrcRef: 9, Reason: ReasonNormal},
		{Type: DC, DstRef: 7, SrcRef: 9},
		{Type: DT, DstRef: 7, Seq: 5, EOT: true, Data: []byte("hello")},
		{Type: DT, DstRef: 7, Seq: MaxSeq, Data: []byte{}},
		{Type: ED, DstRef: 7, Seq: 2, EOT: true, Data: bytes.Repeat([]byte{0xEE}, MaxExpedited)},
		{Type: AK, DstRef: 7, Seq: 3, Credit: 12},
		{Type: AK, DstRef: 7, Seq: 2, Credit: 160, HasSel: true, Sel: 4},
		{Type: EA, DstRef: 7, Seq: 2},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, p := range samples() {
		t.Run(p.Type.String(), func(t *testing.T) {
			b := Encode(p)
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(% x): %v", b, err)
			}
			if got.Data == nil && p.Data != nil {
				got.Data = []byte{}
			}
			if p.Type != DT && p.Type != ED {
				got.Data = p.Data
			}
			if !reflect.DeepEqual(got, p) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, p)
			}
			if b[0] != byte(len(b)-1-len(p.Data)) {
				t.Errorf("LI %d for %d header octets", b[0], len(b)-1-len(p.Data))
			}
		})
	}
}

// The AK octet for octet as the paper's Fig. 3 draws it.
func TestAKFigure3(t *testing.T) {
	normal := Encode(TPDU{Type: AK, DstRef: 0x0102, Seq: 2, Credit: 12})
	if want := "09 60 0102 00000002 000c"; hex.EncodeToString(normal) != stripSpaces(want) {
		t.Errorf("normal AK % x, want %s", normal, want)
	}
	sel := Encode(TPDU{Type: AK, DstRef: 0x0102, Seq: 2, Credit: 12, HasSel: true, Sel: 4})
	if len(sel) != 16 {
		t.Fatalf("selective AK is %d octets, Fig. 3 has 16", len(sel))
	}
	if want := "0f 60 0102 00000002 000c 8f 04 00000004"; hex.EncodeToString(sel) != stripSpaces(want) {
		t.Errorf("selective AK % x, want %s", sel, want)
	}
}

func stripSpaces(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte(" "), nil)) }

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, hex string
		reason    string
	}{
		{"empty", "", "short"},
		{"one octet", "07", "short"},
		{"unknown code", "07 30 0001 00000001", "type"},
		{"LI beyond datagram", "09 f0 0001 00000001", "length"},
		{"LI 255", "ff f0 0001 00000001", "length"},
		{"LI short of fixed part", "03 f0 0001 00", "short"},
		{"AK fixed part cut", "07 60 0001 00000001", "short"},
		{"AK sequence bit 32", "09 60 0001 80000001 000c", "value"},
		{"EA sequence bit 32", "07 20 0001 80000001", "value"},
		{"truncated parameter", "0a 60 0001 00000001 000c 8f", "param"},
		{"parameter longer than header", "0b 60 0001 00000001 000c 8f 04", "param"},
		{"selective of 2 octets", "0d 60 0001 00000001 000c 8f 02 0001", "param"},
		{"two selective parameters", "15 60 0001 00000001 000c 8f 04 00000002 8f 04 00000003", "param"},
		{"TPDU size 64", "09 e0 0000 0001 42 c0 01 06", "value"},
		{"TPDU size 16 K", "09 e0 0000 0001 42 c0 01 0e", "value"},
		{"options of 2 octets", "0a e0 0000 0001 42 c6 02 0101", "param"},
		{"ED of 17 octets", "07 10 0001 80000000" + hex.EncodeToString(make([]byte, 17)), "too_large"},
		{"AK with data", "09 60 0001 00000001 000c ff", "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := hex.DecodeString(stripSpaces(tc.hex))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode(b)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(% x) = %v, want a *DecodeError", b, err)
			}
			if got := Reason(err); got != tc.reason {
				t.Errorf("reason %q (%v), want %q", got, err, tc.reason)
			}
		})
	}
}

// Unknown parameters are skipped (ISO 8073).
func TestDecodeSkipsUnknownParameters(t *testing.T) {
	b, _ := hex.DecodeString(stripSpaces("0d 60 0001 00000003 000c 8a 02 0007"))
	p, err := Decode(b)
	if err != nil || p.Seq != 3 || p.Credit != 12 || p.HasSel {
		t.Fatalf("Decode = %+v, %v", p, err)
	}
}

// FuzzDecode: decoding arbitrary bytes never panics, fails only with a
// *DecodeError with a known reason, and whatever decodes encodes to a
// TPDU that decodes to the same value.
//
//	go test ./tp4/ -run XXX -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	for _, p := range samples() {
		b := Encode(p)
		f.Add(b)
		for n := 0; n < len(b); n += 3 {
			f.Add(b[:n])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		p, err := Decode(b)
		if !bytes.Equal(in, b) {
			t.Fatal("Decode changed its input")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || Reason(err) == "other" {
				t.Fatalf("error %v (%T) is not a *DecodeError with a reason", err, err)
			}
			return
		}
		b2 := Encode(p)
		p2, err := Decode(b2)
		if err != nil {
			t.Fatalf("re-encoded % x of %+v does not decode: %v", b2, p, err)
		}
		if p.Type == CR || p.Type == CC {
			p.CDT &= 0x0F
		}
		if len(p.Data) == 0 {
			p.Data, p2.Data = nil, nil
		}
		if !reflect.DeepEqual(p, p2) {
			t.Fatalf("re-decoded\n got %+v\nwant %+v", p2, p)
		}
	})
}
