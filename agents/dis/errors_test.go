package dis

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decodeBoth runs Decode and a Decoder and checks they agree on failure.
func decodeBoth(t *testing.T, b []byte) error {
	t.Helper()
	p, err := Decode(b)
	var d Decoder
	p2, err2 := d.Decode(b)
	if (err == nil) != (err2 == nil) {
		t.Fatalf("Decode err %v, Decoder err %v", err, err2)
	}
	if err != nil && (p != nil || p2 != nil) {
		t.Fatalf("non-nil PDU with error %v", err)
	}
	return err
}

// Every strict prefix of every encoding fails with ErrShort: the header's
// length field claims more than is there.
func TestTruncatedInputIsErrShort(t *testing.T) {
	for _, p := range samples() {
		b := mustMarshal(t, p)
		for n := 0; n < len(b); n++ {
			err := decodeBoth(t, b[:n])
			if !errors.Is(err, ErrShort) {
				t.Fatalf("%v truncated to %d: err = %v, want ErrShort", p.Type(), n, err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "decode" || e.Field == "" {
				t.Fatalf("%v truncated to %d: %#v", p.Type(), n, err)
			}
			if n >= 3 && e.Type != p.Type() {
				t.Fatalf("%v truncated to %d: error names %v", p.Type(), n, e.Type)
			}
		}
	}
}

// Truncated datagrams whose length field was fixed up to match (a PDU
// shorter than its type's fixed part) also fail, naming the missing field.
func TestShortFixedPart(t *testing.T) {
	b := mustMarshal(t, sampleEntityState())[:100]
	be.PutUint16(b[8:], 100)
	err := decodeBoth(t, b)
	if !errors.Is(err, ErrShort) {
		t.Fatalf("err = %v", err)
	}
	var e *Error
	errors.As(err, &e)
	// Byte 100, the first one missing, lies in the dead reckoning record.
	if e.Field != "dead reckoning parameters" || e.Offset != 88 {
		t.Errorf("field %q offset %d, want dead reckoning parameters at 88", e.Field, e.Offset)
	}
	msg := err.Error()
	for _, want := range []string{"Entity State PDU", `"dead reckoning parameters"`, "offset 88", "144", "short buffer"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestLyingLengthField(t *testing.T) {
	for _, p := range samples() {
		b := mustMarshal(t, p)
		// Length field larger than the datagram: truncated.
		big := append([]byte(nil), b...)
		be.PutUint16(big[8:], uint16(len(b)+1))
		if err := decodeBoth(t, big); !errors.Is(err, ErrShort) {
			t.Errorf("%v length+1: %v", p.Type(), err)
		}
		// Trailing bytes after the PDU the header describes.
		long := append(append([]byte(nil), b...), 0, 0, 0, 0)
		if err := decodeBoth(t, long); !errors.Is(err, ErrLength) {
			t.Errorf("%v trailing bytes: %v", p.Type(), err)
		}
		// Length field and datagram agree but disagree with the type's
		// size: 4 extra bytes for a fixed type, or a count mismatch.
		be.PutUint16(long[8:], uint16(len(long)))
		err := decodeBoth(t, long)
		if !errors.Is(err, ErrLength) && !errors.Is(err, ErrCount) {
			t.Errorf("%v consistent but wrong length: %v", p.Type(), err)
		}
	}
}

func TestAbsurdCounts(t *testing.T) {
	// 255 articulation parameters claimed in a 20-byte "Entity State PDU".
	b := make([]byte, 20)
	b[0], b[2], b[3] = 6, byte(TypeEntityState), 1
	be.PutUint16(b[8:], 20)
	b[19] = 255
	if err := decodeBoth(t, b); !errors.Is(err, ErrShort) {
		t.Errorf("20-byte ESPDU: %v", err)
	}
	// 255 claimed in a well-formed 144-byte one.
	es := mustMarshal(t, &EntityStatePDU{})
	es[19] = 255
	err := decodeBoth(t, es)
	if !errors.Is(err, ErrCount) {
		t.Fatalf("count 255 in 144 bytes: %v", err)
	}
	var e *Error
	errors.As(err, &e)
	if e.Field != "number of articulation parameters" || e.Offset != 19 || !strings.Contains(e.Detail, "4224") {
		t.Errorf("error %+v", e)
	}
	// Same for the other counted types.
	for _, c := range []struct {
		p   PDU
		off int
	}{
		{&DetonationPDU{}, 101}, {&ServiceRequestPDU{}, 25},
		{&ResupplyOfferPDU{}, 24}, {&ResupplyReceivedPDU{}, 24},
	} {
		b := mustMarshal(t, c.p)
		b[c.off] = 255
		if err := decodeBoth(t, b); !errors.Is(err, ErrCount) {
			t.Errorf("%v count 255: %v", c.p.Type(), err)
		}
		// Count one short of the records present.
		with := mustMarshal(t, samplesByType()[c.p.Type()])
		with[c.off]--
		if err := decodeBoth(t, with); !errors.Is(err, ErrCount) {
			t.Errorf("%v count-1: %v", c.p.Type(), err)
		}
	}
	// Decoding absurd input allocates nothing beyond the error itself.
	var d Decoder
	allocs := testing.AllocsPerRun(100, func() { _, _ = d.Decode(es) })
	if allocs > 8 {
		t.Errorf("rejecting a bad count allocated %v times", allocs)
	}
}

func samplesByType() map[PDUType]PDU {
	m := map[PDUType]PDU{}
	for _, p := range samples() {
		m[p.Type()] = p
	}
	return m
}

func TestUnknownAndWrongType(t *testing.T) {
	b := mustMarshal(t, sampleFire())
	for _, typ := range []byte{0, 11, 200, 255} {
		c := append([]byte(nil), b...)
		c[2] = typ
		err := decodeBoth(t, c)
		if !errors.Is(err, ErrUnknownType) {
			t.Errorf("type %d: %v", typ, err)
		}
	}
	var es EntityStatePDU
	err := es.UnmarshalBinary(b)
	if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), "Fire") {
		t.Errorf("Fire into EntityStatePDU: %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	b := make([]byte, MaxPDUSize+1)
	b[2] = byte(TypeEntityState)
	be.PutUint16(b[8:], uint16(len(b)))
	if err := decodeBoth(t, b); !errors.Is(err, ErrTooLarge) {
		t.Errorf("8193 bytes: %v", err)
	}
	huge := &ServiceRequestPDU{Supplies: make([]SupplyQuantity, 1000)}
	if _, err := Marshal(huge); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Marshal 1000 supplies: %v", err)
	}
	if out, err := AppendMarshal([]byte{1}, huge); !errors.Is(err, ErrTooLarge) || len(out) != 1 {
		t.Errorf("AppendMarshal 1000 supplies: %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	over := []PDU{
		&EntityStatePDU{ArticulationParameters: make([]ArticulationParameter, 256)},
		&DetonationPDU{ArticulationParameters: make([]ArticulationParameter, 256)},
		&ServiceRequestPDU{Supplies: make([]SupplyQuantity, 256)},
		&ResupplyOfferPDU{Supplies: make([]SupplyQuantity, 256)},
		&ResupplyReceivedPDU{Supplies: make([]SupplyQuantity, 256)},
	}
	buf := make([]byte, MaxPDUSize)
	for _, p := range over {
		if _, err := p.MarshalTo(buf); !errors.Is(err, ErrCount) {
			t.Errorf("%v with 256 records: %v", p.Type(), err)
		}
		if _, err := Marshal(p); !errors.Is(err, ErrCount) {
			t.Errorf("Marshal %v with 256 records: %v", p.Type(), err)
		}
	}
	for _, p := range samples() {
		small := make([]byte, p.Len()-1)
		n, err := p.MarshalTo(small)
		if n != 0 || !errors.Is(err, ErrShort) {
			t.Errorf("%v into %d bytes: %d, %v", p.Type(), len(small), n, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "encode" || e.Type != p.Type() {
			t.Errorf("%v: %#v", p.Type(), err)
		}
	}
}

// A failed UnmarshalBinary leaves the receiver as it was.
func TestUnmarshalErrorLeavesReceiver(t *testing.T) {
	for _, p := range samples() {
		b := mustMarshal(t, p)
		before := New(p.Type())
		if err := before.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		target := New(p.Type())
		_ = target.UnmarshalBinary(b)
		bad := append([]byte(nil), b...)
		be.PutUint16(bad[8:], uint16(len(b)-1))
		if err := target.UnmarshalBinary(bad[:len(b)-1]); err == nil {
			t.Fatalf("%v: no error", p.Type())
		}
		if !reflect.DeepEqual(target, before) {
			t.Errorf("%v: receiver changed by failed decode", p.Type())
		}
	}
}

// Record slices are reused across UnmarshalBinary calls.
func TestUnmarshalReusesSlices(t *testing.T) {
	big := mustMarshal(t, sampleEntityState())
	small := mustMarshal(t, &EntityStatePDU{ArticulationParameters: make([]ArticulationParameter, 1)})
	var p EntityStatePDU
	if err := p.UnmarshalBinary(big); err != nil {
		t.Fatal(err)
	}
	first := &p.ArticulationParameters[0]
	if err := p.UnmarshalBinary(small); err != nil {
		t.Fatal(err)
	}
	if len(p.ArticulationParameters) != 1 || &p.ArticulationParameters[0] != first {
		t.Error("articulation slice not reused")
	}
	if p.ArticulationParameters[0] != (ArticulationParameter{}) {
		t.Errorf("stale record: %+v", p.ArticulationParameters[0])
	}
	none := mustMarshal(t, &EntityStatePDU{})
	if err := p.UnmarshalBinary(none); err != nil || len(p.ArticulationParameters) != 0 {
		t.Errorf("zero records: %v %d", err, len(p.ArticulationParameters))
	}
	// Round-trip of the re-decoded struct still matches the bytes.
	if got := mustMarshal(t, &p); !bytes.Equal(got, none) {
		t.Error("re-encode after reuse differs")
	}
}

func TestPeekHeaderShort(t *testing.T) {
	_, err := PeekHeader([]byte{6, 1, 1})
	if !errors.Is(err, ErrShort) || !strings.Contains(err.Error(), "protocol family") {
		t.Errorf("PeekHeader: %v", err)
	}
}
