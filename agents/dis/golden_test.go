package dis

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// Golden encodings written out by hand from the IEEE 1278.1 layouts (float
// bit patterns from Python's struct.pack(">f"/">d")), one field group per
// line, offsets on the left.

const goldenEntityState = `
000: 06 07 01 01 | 01020305 | 00b0 | 0000
012: 0101 0202 0303
018: 02 | 02
020: 01 02 00e1 03 04 05 06
028: 07 08 00de 09 0a 0b 0c
036: 3fc00000 c0100000 40480000
048: c144a78fc0000000 c1509ba650000000 414cd9af10000000
072: 3f000000 be800000 3fe00000
084: 11223344
088: 04 0102030405060708090a0b0c0d0e0f 3e000000 3ec00000 c11c0000 3d800000 bd000000 3c800000
128: 01 50524f544f4c41422d3031
140: 55667788
144: 00 03 0000 0000100b 3fc0000000000000
160: 01 04 0001 00000380 0203004001020300
`

const goldenFire = `
000: 06 07 02 02 | 02020202 | 0060 | 0000
012: 000b 000c 000d
018: 000e 000f 0010
024: 0011 0012 0013
030: 0014 0015 0016
036: a0b0c0d0
040: 408f440000000000 409f410000000000 40a7704000000000
064: 02 09 00e1 02 01 03 04 | 03e8 07d0 0003 0258
080: 42c90000 43484000 c3961000
092: 458ca400
`

const goldenCollision = `
000: 06 07 04 01 | 04040404 | 003c | 0000
012: 0033 0034 0035
018: 0036 0037 0038
024: 0039 003a 003b
030: 01 | 00
032: 40b00000 40d00000 40f00000
044: 47703c80
048: bfa00000 40300000 bf000000
`

const goldenServiceRequest = `
000: 06 07 05 03 | 05050505 | 0034 | 0000
012: 003d 003e 003f
018: 0040 0041 0042
024: 02 | 02 | 0000
028: 09 0b 00d2 0c 0d 0e 0f | 41280000
040: 09 13 00da 14 15 16 17 | 41940000
`

// parseGolden strips the "NNN:" offset labels, checking each against the
// number of bytes before it, and decodes the hex.
func parseGolden(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for _, line := range bytes.Split([]byte(s), []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		label, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			t.Fatalf("golden line without offset: %q", line)
		}
		var off int
		for _, c := range label {
			off = off*10 + int(c-'0')
		}
		if off != len(out) {
			t.Fatalf("golden line %q: label says offset %d, it is at %d", line, off, len(out))
		}
		out = append(out, unhex(t, string(rest))...)
	}
	return out
}

func TestGoldenBytes(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		p      PDU
	}{
		{"EntityState", goldenEntityState, sampleEntityState()},
		{"Fire", goldenFire, sampleFire()},
		{"Collision", goldenCollision, sampleCollision()},
		{"ServiceRequest", goldenServiceRequest, sampleServiceRequest()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := parseGolden(t, tt.golden)
			got := mustMarshal(t, tt.p)
			if !bytes.Equal(got, want) {
				for i := range want {
					if i >= len(got) || got[i] != want[i] {
						t.Fatalf("first difference at offset %d\n got % x\nwant % x", i, got, want)
					}
				}
				t.Fatalf("got %d bytes, want %d", len(got), len(want))
			}
			dec, err := Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dec, tt.p) {
				t.Errorf("decoded golden:\n got %+v\nwant %+v", dec, tt.p)
			}
		})
	}
}

// Spot checks of individual offsets, read straight from the encoding.
func TestEntityStateOffsets(t *testing.T) {
	p := sampleEntityState()
	b := mustMarshal(t, p)
	u16 := func(o int) uint16 { return uint16(b[o])<<8 | uint16(b[o+1]) }
	f64 := func(o int) float64 {
		var u uint64
		for i := 0; i < 8; i++ {
			u = u<<8 | uint64(b[o+i])
		}
		return math.Float64frombits(u)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"entity id site @12", u16(12), uint16(0x0101)},
		{"entity id application @14", u16(14), uint16(0x0202)},
		{"entity id entity @16", u16(16), uint16(0x0303)},
		{"force id @18", b[18], uint8(2)},
		{"articulation count @19", b[19], uint8(2)},
		{"entity kind @20", b[20], uint8(1)},
		{"country @22", u16(22), uint16(225)},
		{"alt entity kind @28", b[28], uint8(7)},
		{"location x @48", f64(48), -2707231.5},
		{"location y @56", f64(56), -4353689.25},
		{"location z @64", f64(64), 3781470.125},
		{"dead reckoning algorithm @88", b[88], uint8(4)},
		{"marking charset @128", b[128], uint8(1)},
		{"marking @129", string(b[129:140]), "PROTOLAB-01"},
		{"capabilities @140", b[140:144], []byte{0x55, 0x66, 0x77, 0x88}},
		{"first articulation designator @144", b[144], uint8(0)},
		{"second articulation designator @160", b[160], uint8(1)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestFireOffsets(t *testing.T) {
	b := mustMarshal(t, sampleFire())
	checks := map[int][]byte{
		12: {0, 11, 0, 12, 0, 13},       // firing entity
		18: {0, 14, 0, 15, 0, 16},       // target entity
		24: {0, 17, 0, 18, 0, 19},       // munition id
		30: {0, 20, 0, 21, 0, 22},       // event id
		36: {0xa0, 0xb0, 0xc0, 0xd0},    // fire mission index
		40: {0x40, 0x8f, 0x44, 0, 0, 0}, // location x = 1000.5
		64: {2, 9, 0, 225},              // munition kind, domain, country
		72: {0x03, 0xe8, 0x07, 0xd0},    // warhead 1000, fuse 2000
		92: {0x45, 0x8c, 0xa4, 0x00},    // range 4500.5
		2:  {byte(TypeFire), byte(FamilyWarfare)},
	}
	for off, want := range checks {
		if got := b[off : off+len(want)]; !bytes.Equal(got, want) {
			t.Errorf("offset %d: got % x, want % x", off, got, want)
		}
	}
}
