package dis

import (
	"bytes"
	"encoding"
	"reflect"
	"testing"
)

func TestRoundTripEveryType(t *testing.T) {
	tests := []struct {
		p       PDU
		wantLen int
		family  ProtocolFamily
	}{
		{sampleEntityState(), 144 + 2*16, FamilyEntityInformation},
		{sampleFire(), 96, FamilyWarfare},
		{sampleDetonation(), 104 + 16, FamilyWarfare},
		{sampleCollision(), 60, FamilyEntityInformation},
		{sampleServiceRequest(), 28 + 2*12, FamilyLogistics},
		{sampleResupplyOffer(), 28 + 3*12, FamilyLogistics},
		{sampleResupplyReceived(), 28 + 12, FamilyLogistics},
		{sampleResupplyCancel(), 24, FamilyLogistics},
		{sampleRepairComplete(), 28, FamilyLogistics},
		{sampleRepairResponse(), 28, FamilyLogistics},
	}
	if len(tests) != len(Types) {
		t.Fatalf("table covers %d types, package has %d", len(tests), len(Types))
	}
	for i, tt := range tests {
		typ := tt.p.Type()
		t.Run(typ.String(), func(t *testing.T) {
			if typ != Types[i] {
				t.Fatalf("Type() = %d, want %d", typ, Types[i])
			}
			if typ.Family() != tt.family {
				t.Errorf("Family() = %v, want %v", typ.Family(), tt.family)
			}
			b := mustMarshal(t, tt.p)
			if len(b) != tt.wantLen || tt.p.Len() != tt.wantLen {
				t.Fatalf("len(Marshal) = %d, Len() = %d, want %d", len(b), tt.p.Len(), tt.wantLen)
			}
			// Header bytes.
			wantHdr := []byte{6, 7, byte(typ), byte(tt.family), byte(typ) & 0x0f, 0, 0, 0, byte(tt.wantLen >> 8), byte(tt.wantLen), 0, 0}
			wantHdr[4], wantHdr[5], wantHdr[6], wantHdr[7] = byte(typ), byte(typ), byte(typ), byte(typ)
			if typ == TypeEntityState {
				copy(wantHdr[4:8], []byte{1, 2, 3, 5})
			}
			if !bytes.Equal(b[:12], wantHdr) {
				t.Errorf("header = % x, want % x", b[:12], wantHdr)
			}
			h, err := PeekHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.PDUType != typ || int(h.Length) != tt.wantLen || h.ProtocolVersion != ProtocolVersion || h.ProtocolFamily != tt.family || h.ExerciseID != 7 {
				t.Errorf("PeekHeader = %+v", h)
			}

			// Decode dispatches to the right struct and reproduces every field.
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.p) {
				t.Errorf("Decode mismatch:\n got %+v\nwant %+v", got, tt.p)
			}
			// UnmarshalBinary into a fresh struct.
			fresh := New(typ)
			if err := fresh.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fresh, tt.p) {
				t.Errorf("UnmarshalBinary mismatch:\n got %+v\nwant %+v", fresh, tt.p)
			}
			// Decoder reuse gives the same.
			var d Decoder
			for k := 0; k < 2; k++ {
				got, err := d.Decode(b)
				if err != nil || !reflect.DeepEqual(got, tt.p) {
					t.Errorf("Decoder.Decode #%d: %v\n got %+v\nwant %+v", k, err, got, tt.p)
				}
			}

			// MarshalTo into a dirty, oversized buffer writes exactly Len()
			// bytes, padding included, and leaves the rest alone.
			dirty := bytes.Repeat([]byte{0xaa}, tt.wantLen+5)
			n, err := tt.p.MarshalTo(dirty)
			if err != nil || n != tt.wantLen {
				t.Fatalf("MarshalTo = %d, %v", n, err)
			}
			if !bytes.Equal(dirty[:n], b) {
				t.Errorf("MarshalTo into dirty buffer differs:\n got % x\nwant % x", dirty[:n], b)
			}
			if !bytes.Equal(dirty[n:], []byte{0xaa, 0xaa, 0xaa, 0xaa, 0xaa}) {
				t.Errorf("MarshalTo wrote past Len(): % x", dirty[n:])
			}
			// AppendMarshal keeps the prefix.
			out, err := AppendMarshal([]byte("xy"), tt.p)
			if err != nil || string(out[:2]) != "xy" || !bytes.Equal(out[2:], b) {
				t.Errorf("AppendMarshal = % x, %v", out, err)
			}
			// encoding.BinaryMarshaler / BinaryUnmarshaler.
			mb, err := tt.p.(encoding.BinaryMarshaler).MarshalBinary()
			if err != nil || !bytes.Equal(mb, b) {
				t.Errorf("MarshalBinary = % x, %v", mb, err)
			}
			var _ encoding.BinaryUnmarshaler = tt.p
		})
	}
}

// The header's PDU type and length fields are outputs of encoding: stale
// values in the struct are ignored.
func TestMarshalSetsTypeAndLength(t *testing.T) {
	p := sampleDetonation()
	p.Header.PDUType = TypeFire
	p.Header.Length = 9999
	b := mustMarshal(t, p)
	if b[2] != byte(TypeDetonation) || int(be.Uint16(b[8:])) != len(b) {
		t.Errorf("type %d length %d, want 3 and %d", b[2], be.Uint16(b[8:]), len(b))
	}
	// Zero-value PDUs encode to their fixed size.
	for _, typ := range Types {
		p := New(typ)
		b := mustMarshal(t, p)
		if len(b) != typ.FixedSize() || b[2] != byte(typ) || int(be.Uint16(b[8:])) != len(b) {
			t.Errorf("%v zero value: len %d type %d length field %d", typ, len(b), b[2], be.Uint16(b[8:]))
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("%v zero value does not decode: %v", typ, err)
		}
	}
}

func TestSizes(t *testing.T) {
	want := map[PDUType]int{
		TypeEntityState: 144, TypeFire: 96, TypeDetonation: 104, TypeCollision: 60,
		TypeServiceRequest: 28, TypeResupplyOffer: 28, TypeResupplyReceived: 28,
		TypeResupplyCancel: 24, TypeRepairComplete: 28, TypeRepairResponse: 28,
	}
	for _, typ := range Types {
		if typ.FixedSize() != want[typ] || New(typ).Len() != want[typ] {
			t.Errorf("%v: FixedSize %d, zero Len %d, want %d", typ, typ.FixedSize(), New(typ).Len(), want[typ])
		}
	}
	if PDUType(0).Known() || PDUType(11).Known() || New(11) != nil || PDUType(11).FixedSize() != 0 {
		t.Error("type 11 should be unknown")
	}
	// The largest possible PDU of each type fits MaxPDUSize.
	for _, p := range []PDU{
		&EntityStatePDU{ArticulationParameters: make([]ArticulationParameter, 255)},
		&DetonationPDU{ArticulationParameters: make([]ArticulationParameter, 255)},
		&ServiceRequestPDU{Supplies: make([]SupplyQuantity, 255)},
		&ResupplyOfferPDU{Supplies: make([]SupplyQuantity, 255)},
		&ResupplyReceivedPDU{Supplies: make([]SupplyQuantity, 255)},
	} {
		b := mustMarshal(t, p)
		if len(b) > MaxPDUSize {
			t.Errorf("%v with 255 records is %d bytes", p.Type(), len(b))
		}
		got, err := Decode(b)
		if err != nil || got.Len() != len(b) {
			t.Errorf("%v with 255 records: %v", p.Type(), err)
		}
	}
}

func TestTypeAndFamilyNames(t *testing.T) {
	if TypeResupplyReceived.String() != "Resupply Received" || PDUType(99).String() != "PDU type 99" {
		t.Error(TypeResupplyReceived.String(), PDUType(99).String())
	}
	if FamilyLogistics.String() != "Logistics" || ProtocolFamily(0).String() != "Other" || ProtocolFamily(9).String() != "family 9" {
		t.Error("family names")
	}
	if PDUType(99).Family() != 0 {
		t.Error("unknown type has a family")
	}
}

func TestRecordHelpers(t *testing.T) {
	m := NewMarking("ABRAMS-M1A2-TOO-LONG")
	if m.CharacterSet != 1 || m.String() != "ABRAMS-M1A2" {
		t.Errorf("marking %q", m.String())
	}
	if NewMarking("T1").String() != "T1" {
		t.Error("short marking")
	}
	var a ArticulationParameter
	a.SetFloat64(-3.5)
	if a.Float64() != -3.5 {
		t.Error("Float64")
	}
	a.SetFloat32(1.5)
	if a.Float32() != 1.5 || a.Value != 0x3fc0000000000000 {
		t.Errorf("Float32: %x", a.Value)
	}
	et := EntityType{Kind: 2, Domain: 3, Country: 0x1234, Category: 5, Subcategory: 6, Specific: 7, Extra: 8}
	a.SetAttachedEntityType(et)
	if a.AttachedEntityType() != et || a.Value != 0x0203123405060708 {
		t.Errorf("AttachedEntityType: %x", a.Value)
	}
}
