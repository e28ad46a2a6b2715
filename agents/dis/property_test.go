package dis

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
)

// normalize makes a randomly generated PDU struct equal to what decoding
// its encoding yields: the header's type and length are outputs of
// encoding, and an empty record list decodes as nil.
func normalize(p PDU) {
	rv := reflect.ValueOf(p).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() == reflect.Slice && f.Len() == 0 {
			f.Set(reflect.Zero(f.Type()))
		}
	}
	h := rv.FieldByName("Header").Addr().Interface().(*Header)
	h.PDUType = p.Type()
	h.Length = uint16(p.Len())
}

// quickRoundTrip checks with testing/quick that random values of the PDU
// struct T survive Marshal, Decode and UnmarshalBinary unchanged.
func quickRoundTrip[T any, P interface {
	*T
	PDU
}](t *testing.T) {
	f := func(v T) bool {
		p := P(&v)
		normalize(p)
		b, err := Marshal(p)
		if err != nil {
			t.Logf("Marshal: %v", err)
			return false
		}
		if len(b) != p.Len() {
			return false
		}
		got, err := Decode(b)
		if err != nil {
			t.Logf("Decode: %v", err)
			return false
		}
		if !reflect.DeepEqual(got, p) {
			t.Logf("mismatch:\n got %+v\nwant %+v", got, p)
			return false
		}
		var q T
		if err := P(&q).UnmarshalBinary(b); err != nil || !reflect.DeepEqual(P(&q), p) {
			return false
		}
		b2, err := Marshal(got)
		return err == nil && bytes.Equal(b, b2)
	}
	cfg := &quick.Config{MaxCount: 300, Rand: rand.New(rand.NewSource(1278))}
	if err := quick.Check(f, cfg); err != nil {
		t.Error(err)
	}
}

func TestQuickRoundTrip(t *testing.T) {
	t.Run("EntityState", quickRoundTrip[EntityStatePDU])
	t.Run("Fire", quickRoundTrip[FirePDU])
	t.Run("Detonation", quickRoundTrip[DetonationPDU])
	t.Run("Collision", quickRoundTrip[CollisionPDU])
	t.Run("ServiceRequest", quickRoundTrip[ServiceRequestPDU])
	t.Run("ResupplyOffer", quickRoundTrip[ResupplyOfferPDU])
	t.Run("ResupplyReceived", quickRoundTrip[ResupplyReceivedPDU])
	t.Run("ResupplyCancel", quickRoundTrip[ResupplyCancelPDU])
	t.Run("RepairComplete", quickRoundTrip[RepairCompletePDU])
	t.Run("RepairResponse", quickRoundTrip[RepairResponsePDU])
}

// countField gives the offset of the record count and the record size of
// the types that carry records.
var countField = map[PDUType][2]int{
	TypeEntityState:      {19, 16},
	TypeDetonation:       {101, 16},
	TypeServiceRequest:   {25, 12},
	TypeResupplyOffer:    {24, 12},
	TypeResupplyReceived: {24, 12},
}

// randomValidPDU builds the encoding of a valid PDU of a random type from
// random bytes: only the header type, length and record count are fixed
// up, so every float bit pattern (NaNs with payloads, infinities,
// denormals) and every padding value occurs.
func randomValidPDU(r *rand.Rand) []byte {
	typ := Types[r.Intn(len(Types))]
	n := 0
	size := typ.FixedSize()
	if cf, ok := countField[typ]; ok {
		n = r.Intn(20)
		if r.Intn(50) == 0 {
			n = 255
		}
		size += n * cf[1]
	}
	b := make([]byte, size)
	r.Read(b)
	b[2] = byte(typ)
	be.PutUint16(b[8:], uint16(size))
	if cf, ok := countField[typ]; ok {
		b[cf[0]] = byte(n)
	}
	return b
}

// Random valid PDUs decode, and re-encode to the same bytes except for
// padding, which comes back as zero.
func TestRandomValidPDUsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1995))
	var d Decoder
	buf := make([]byte, MaxPDUSize)
	for i := 0; i < 20000; i++ {
		b := randomValidPDU(r)
		p, err := d.Decode(b)
		if err != nil {
			t.Fatalf("#%d: % x: %v", i, b, err)
		}
		n, err := p.MarshalTo(buf)
		if err != nil {
			t.Fatalf("#%d: MarshalTo: %v", i, err)
		}
		if want := zeroPadding(p.Type(), b); !bytes.Equal(buf[:n], want) {
			t.Fatalf("#%d %v:\n got % x\nwant % x", i, p.Type(), buf[:n], want)
		}
		// Padding is the only difference.
		if p.Type() == TypeEntityState || p.Type() == TypeFire || p.Type() == TypeResupplyCancel {
			b[10], b[11] = 0, 0
			if !bytes.Equal(buf[:n], b) {
				t.Fatalf("#%d %v: re-encoding differs beyond header padding", i, p.Type())
			}
		}
	}
}
