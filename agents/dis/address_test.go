package dis

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestPacketAddress(t *testing.T) {
	// "the packet address is the message address divided by 32"
	for _, c := range []struct {
		a    MessageAddress
		want uint16
	}{
		{0, 0}, {21, 0}, {31, 0}, {32, 1}, {63, 1}, {64, 2},
		{32767, 1023}, {32768, 1024}, {65535, 2047},
	} {
		if got := c.a.PacketAddress(); got != c.want {
			t.Errorf("MessageAddress(%d).PacketAddress() = %d, want %d", c.a, got, c.want)
		}
	}
}

func TestAddressedRoundTrip(t *testing.T) {
	b := AppendMessageAddress(nil, 0x1234)
	if !bytes.Equal(b, []byte{0x12, 0x34}) {
		t.Fatalf("big-endian prefix: % x", b)
	}
	var buf []byte
	var err error
	for i, p := range samples() {
		buf, err = AppendAddressed(buf[:0], MessageAddress(1000+i), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) != 2+p.Len() {
			t.Fatalf("len %d", len(buf))
		}
		a, rest, err := SplitMessageAddress(buf)
		if err != nil || a != MessageAddress(1000+i) {
			t.Fatalf("split: %d %v", a, err)
		}
		got, err := Decode(rest)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("decode after split: %v", err)
		}
	}
	if _, _, err := SplitMessageAddress([]byte{1}); !errors.Is(err, ErrShort) {
		t.Errorf("1 byte: %v", err)
	}
	bad := &EntityStatePDU{ArticulationParameters: make([]ArticulationParameter, 300)}
	out, err := AppendAddressed([]byte{9}, 1, bad)
	if !errors.Is(err, ErrCount) || !bytes.Equal(out, []byte{9}) {
		t.Errorf("AppendAddressed error: % x %v", out, err)
	}
}

func TestTimestamp(t *testing.T) {
	unit := time.Hour / (1 << 31) // about 1.676 µs
	for _, c := range []struct {
		d   time.Duration
		abs bool
	}{
		{0, false}, {0, true}, {time.Minute, true}, {30 * time.Minute, false},
		{time.Hour - time.Microsecond, true}, {1234567 * time.Microsecond, false},
	} {
		ts := NewTimestamp(c.d, c.abs)
		d, abs := TimestampDuration(ts)
		if abs != c.abs || d > c.d || c.d-d > unit+1 {
			t.Errorf("%v abs=%v: ts %#x decodes to %v abs=%v", c.d, c.abs, ts, d, abs)
		}
	}
	if NewTimestamp(30*time.Minute, true) != 0x80000001 {
		t.Errorf("half hour absolute = %#x, want 0x80000001", NewTimestamp(30*time.Minute, true))
	}
	if NewTimestamp(time.Hour+time.Minute, false) != NewTimestamp(time.Minute, false) ||
		NewTimestamp(-time.Minute, false) != NewTimestamp(59*time.Minute, false) {
		t.Error("timestamps are not taken modulo the hour")
	}
	if d, _ := TimestampDuration(0xffffffff); d >= time.Hour || d < time.Hour-2*unit {
		t.Errorf("max timestamp = %v", d)
	}
}

func TestNewHeader(t *testing.T) {
	h := NewHeader(TypeRepairComplete, 3, 42)
	want := Header{ProtocolVersion: 6, ExerciseID: 3, PDUType: TypeRepairComplete, ProtocolFamily: FamilyLogistics, Timestamp: 42}
	if h != want {
		t.Errorf("NewHeader = %+v", h)
	}
}

// A datagram carrying several PDUs back to back can be split with
// PeekHeader.
func TestSplitConcatenatedPDUs(t *testing.T) {
	var dgram []byte
	for _, p := range samples() {
		var err error
		if dgram, err = AppendMarshal(dgram, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Decode(dgram); !errors.Is(err, ErrLength) {
		t.Errorf("Decode of several PDUs: %v", err)
	}
	var got []PDUType
	for len(dgram) > 0 {
		h, err := PeekHeader(dgram)
		if err != nil || int(h.Length) > len(dgram) {
			t.Fatalf("peek: %v", err)
		}
		p, err := Decode(dgram[:h.Length])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Type())
		dgram = dgram[h.Length:]
	}
	if !reflect.DeepEqual(got, Types[:]) {
		t.Errorf("types %v", got)
	}
}
