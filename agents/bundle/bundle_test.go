package bundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestThesisLayoutByteForByte(t *testing.T) {
	var w Writer
	w.Begin(make([]byte, 0, 1500), 1, 0)
	if !w.AddAddr(0x0043, []byte("ab")) || !w.AddAddr(0x1001, []byte("xyz")) {
		t.Fatal("messages did not fit")
	}
	w.SetMask(0x0005)
	got := w.Finish()
	want := []byte{
		0x00, 0x05, // bundle mask: hosts 1 and 3
		0x00, 0x43, 'a', 'b', // message 1: address 0x0043 + payload
		0x10, 0x01, 'x', 'y', 'z', // message 2
		0x00, 0x06, 0x00, 0x0B, // end indexes (offsets just past each message)
		0x02, // message count
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("bundle\n got % x\nwant % x", got, want)
	}
	var r Reader
	if err := r.Open(got); err != nil {
		t.Fatal(err)
	}
	if r.Mask() != 5 || r.Count() != 2 || r.Words() != 1 {
		t.Fatalf("mask %x count %d words %d", r.Mask(), r.Count(), r.Words())
	}
	a, p, ok := r.NextAddr()
	if !ok || a != 0x43 || string(p) != "ab" || !Priority(a) || Group(a) != 2 {
		t.Fatalf("message 1: %x %q %v", a, p, ok)
	}
	a, p, ok = r.NextAddr()
	if !ok || a != 0x1001 || string(p) != "xyz" {
		t.Fatalf("message 2: %x %q %v", a, p, ok)
	}
	if _, _, ok = r.NextAddr(); ok {
		t.Fatal("a third message")
	}
}

func TestWideMaskRoundTrip(t *testing.T) {
	var w Writer
	w.Begin(make([]byte, 0, 1500), Words(40), 0)
	m1, m2 := Bit(1)|Bit(40), Bit(17)
	w.AddMask(m1, []byte("one"))
	w.AddMask(m2, []byte("two!"))
	b := w.Finish()
	if b[len(b)-1] != 0x83 || binary.BigEndian.Uint16(b[len(b)-3:]) != 2 {
		t.Fatalf("trailer % x", b[len(b)-5:])
	}
	var r Reader
	if err := r.Open(b); err != nil {
		t.Fatal(err)
	}
	if r.Words() != 3 || r.Mask() != m1|m2 {
		t.Fatalf("words %d mask %x", r.Words(), r.Mask())
	}
	m, p, _ := r.NextMask()
	if m != m1 || string(p) != "one" {
		t.Fatalf("%x %q", m, p)
	}
	m, p, _ = r.NextMask()
	if m != m2 || string(p) != "two!" || !m.Has(17) || m.Has(1) {
		t.Fatalf("%x %q", m, p)
	}
}

func TestMaxBundleAndThesisCountRespected(t *testing.T) {
	var w Writer
	w.Begin(make([]byte, 0, 65535), 1, 200)
	n := 0
	for w.AddAddr(2, make([]byte, 148)) {
		n++
	}
	if n != 1 || len(w.Finish()) > 200 {
		t.Fatalf("%d messages of 150 B in a 200 B bundle", n)
	}
	w.Begin(make([]byte, 0, 65535), 1, 0)
	for w.AddAddr(2, nil) {
		n++
	}
	if w.Count() != MaxThesisCount {
		t.Fatalf("thesis format holds %d messages", w.Count())
	}
}

func TestMalformedBundlesAreErrorsWithReasons(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"two bytes", []byte{0, 1}, ErrShort},
		{"count beyond the data", []byte{0, 1, 0, 9, 5}, ErrCount},
		{"end index before the mask", []byte{0, 1, 0xAA, 0xBB, 0, 1, 1}, ErrIndex},
		{"end index past the messages", []byte{0, 1, 0xAA, 0xBB, 0, 9, 1}, ErrIndex},
		{"one-byte message", []byte{0, 1, 0xAA, 0xBB, 0, 3, 0, 4, 2}, ErrMessage},
		{"gap before the trailer", []byte{0, 1, 0xAA, 0xBB, 0xCC, 0, 4, 1}, ErrIndex},
		{"too wide a mask", []byte{0, 0, 0, 0x85}, ErrWords},
	}
	for _, c := range cases {
		var r Reader
		err := r.Open(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if Reason(err) == "" {
			t.Errorf("%s: no reason", c.name)
		}
	}
}

// Table 3-1 of the thesis: three hosts, packet addresses with their interest
// bits; delivery replaces the address by them, the sender's bit cleared.
func TestGroupDatabaseTable31AndReflection(t *testing.T) {
	var d DB
	d.Join(0, 1)
	d.Join(0, 3)
	d.Join(1, 2)
	if d.Interest(0) != 0b101 || d.Interest(1) != 0b010 || d.Interest(2) != 0 {
		t.Fatalf("interest %b %b %b", d.Interest(0), d.Interest(1), d.Interest(2))
	}
	addr := uint16(0*PerGroup + 6)
	if got := d.Deliver(addr, 1); got != Bit(3) {
		t.Fatalf("host 1's message to group 0 goes to %b, want host 3 only", got)
	}
	if got := d.Deliver(addr, 0); got != Bit(1)|Bit(3) {
		t.Fatalf("an outside message goes to %b", got)
	}
	if d.Drop(0, 1) || !d.Drop(0, 3) {
		t.Fatal("drop: last interest not reported")
	}
}

func TestLeastUsedC1(t *testing.T) {
	d := DB{C1s: 2}
	got := []int{d.Assign(10), d.Assign(11), d.Assign(12), d.Assign(10)}
	if want := []int{1, 2, 1, 1}; !equal(got, want) {
		t.Fatalf("assignments %v, want %v", got, want)
	}
	d.Release(10)
	d.Release(12)
	if d.Assign(13) != 1 || d.Load(1) != 1 || d.Load(2) != 1 {
		t.Fatalf("after release: C1 loads %d %d", d.Load(1), d.Load(2))
	}
}

func TestControlRoundTrip(t *testing.T) {
	c := Control{Type: CtlJoin, Host: 5, Group: 300, Level: 1, Seq: 77}
	p := c.AppendPayload(nil)
	if len(p)+AddrBytes != ControlLen {
		t.Fatalf("control message is %d bytes", len(p)+AddrBytes)
	}
	got, err := ParseControl(p)
	if err != nil || got != c {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := ParseControl(p[:5]); err == nil {
		t.Fatal("short control accepted")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzOpen: any input either opens and walks within bounds, or is an error.
func FuzzOpen(f *testing.F) {
	var w Writer
	w.Begin(make([]byte, 0, 1500), 1, 0)
	w.AddAddr(3, []byte("hello"))
	f.Add(append([]byte(nil), w.Finish()...))
	w.Begin(make([]byte, 0, 1500), 2, 0)
	w.AddMask(Bit(20), []byte("wide"))
	f.Add(append([]byte(nil), w.Finish()...))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reader
		if err := r.Open(b); err != nil {
			if Reason(err) == "" {
				t.Fatal("error without a reason")
			}
			return
		}
		n := 0
		for {
			_, p, ok := r.NextAddr()
			if !ok {
				break
			}
			if len(p) > len(b) {
				t.Fatal("payload beyond the input")
			}
			n++
		}
		if n != r.Count() {
			t.Fatalf("walked %d of %d messages", n, r.Count())
		}
		r.Open(b)
		for {
			if _, _, ok := r.NextMask(); !ok {
				break
			}
		}
	})
}

func BenchmarkWriteRead(b *testing.B) {
	var w Writer
	var r Reader
	buf := make([]byte, 0, 1500)
	payload := make([]byte, 148)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Begin(buf, 1, 0)
		for w.AddAddr(uint16(i), payload) {
		}
		bb := w.Finish()
		_ = r.Open(bb)
		for {
			if _, _, ok := r.NextAddr(); !ok {
				break
			}
		}
	}
}
