package dis

import (
	"bytes"
	"errors"
	"testing"
)

var sentinels = []error{ErrShort, ErrUnknownType, ErrWrongType, ErrLength, ErrCount, ErrTooLarge}

// FuzzDecode: decoding arbitrary bytes never panics, fails only with an
// *Error wrapping a sentinel, and whatever decodes re-encodes to the input
// byte for byte except padding bytes (see paddingRanges), which the
// decoder ignores and the encoder writes as zero.
//
//	go test ./dis/ -run XXX -fuzz FuzzDecode -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, p := range samples() {
		b := mustMarshal(f, p)
		f.Add(b)
		for _, n := range []int{0, 1, 2, 3, 8, 11, 12, 13, len(b) / 2, len(b) - 1} {
			f.Add(b[:n])
		}
		f.Add(mustMarshal(f, New(p.Type())))
		long := append(append([]byte(nil), b...), 0xde, 0xad)
		f.Add(long)
		be.PutUint16(long[8:], uint16(len(long)))
		f.Add(long)
	}
	absurd := make([]byte, 20)
	absurd[2], absurd[19] = byte(TypeEntityState), 255
	be.PutUint16(absurd[8:], 20)
	f.Add(absurd)

	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		p, err := Decode(b)
		var d Decoder
		p2, err2 := d.Decode(b)
		if !bytes.Equal(in, b) {
			t.Fatal("decoding modified its input")
		}
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Decode err %v, Decoder.Decode err %v", err, err2)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Op != "decode" {
				t.Fatalf("error is not a decode *Error: %#v", err)
			}
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			_ = err.Error()
			return
		}
		if p.Len() != len(b) || p.Type() != PDUType(b[2]) {
			t.Fatalf("decoded %v with Len %d from %d bytes", p.Type(), p.Len(), len(b))
		}
		out, err := Marshal(p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if want := zeroPadding(p.Type(), b); !bytes.Equal(out, want) {
			t.Fatalf("re-encoding differs beyond padding:\n  in % x\n out % x", b, out)
		}
		out2, err := Marshal(p2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("Decoder result re-encodes differently: %v", err)
		}
		// The canonical form is a fixed point.
		p3, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if out3, _ := Marshal(p3); !bytes.Equal(out3, out) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}

// FuzzMessageAddress: splitting an addressed message never panics and
// re-appending the address restores the input.
func FuzzMessageAddress(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x12})
	f.Add(AppendMessageAddress(nil, 4242))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, rest, err := SplitMessageAddress(b)
		if err != nil {
			if len(b) >= 2 || !errors.Is(err, ErrShort) {
				t.Fatalf("%d bytes: %v", len(b), err)
			}
			return
		}
		if got := append(AppendMessageAddress(nil, a), rest...); !bytes.Equal(got, b) {
			t.Fatalf("got % x, want % x", got, b)
		}
		if a.PacketAddress() > 2047 {
			t.Fatalf("packet address %d", a.PacketAddress())
		}
	})
}
