package dis

import (
	"strings"
	"testing"
)

func benchName(t PDUType) string { return strings.ReplaceAll(t.String(), " ", "") }

// BenchmarkEncode/<type>: MarshalTo into a reused buffer (the send path).
func BenchmarkEncode(b *testing.B) {
	for _, p := range samples() {
		b.Run(benchName(p.Type()), func(b *testing.B) {
			buf := make([]byte, MaxPDUSize)
			b.SetBytes(int64(p.Len()))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := p.MarshalTo(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode/<type>: UnmarshalBinary into a reused struct (the
// receive path when the type is known).
func BenchmarkDecode(b *testing.B) {
	for _, p := range samples() {
		enc := mustMarshal(b, p)
		b.Run(benchName(p.Type()), func(b *testing.B) {
			q := New(p.Type())
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := q.UnmarshalBinary(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecoder: type dispatch through a reused Decoder (the receive
// path of a host that gets mixed PDUs).
func BenchmarkDecoder(b *testing.B) {
	var encs [][]byte
	for _, p := range samples() {
		encs = append(encs, mustMarshal(b, p))
	}
	var d Decoder
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := d.Decode(encs[i%len(encs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAlloc: the allocating package-level Decode, for contrast.
func BenchmarkDecodeAlloc(b *testing.B) {
	enc := mustMarshal(b, sampleEntityState())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// Zero allocations on the hot paths are part of the contract.
func TestHotPathsDoNotAllocate(t *testing.T) {
	buf := make([]byte, MaxPDUSize)
	var d Decoder
	for _, p := range samples() {
		enc := mustMarshal(t, p)
		q := New(p.Type())
		_ = q.UnmarshalBinary(enc) // grow record slices once
		_, _ = d.Decode(enc)
		if a := testing.AllocsPerRun(100, func() { _, _ = p.MarshalTo(buf) }); a != 0 {
			t.Errorf("%v MarshalTo: %v allocs", p.Type(), a)
		}
		if a := testing.AllocsPerRun(100, func() { _ = q.UnmarshalBinary(enc) }); a != 0 {
			t.Errorf("%v UnmarshalBinary: %v allocs", p.Type(), a)
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = d.Decode(enc) }); a != 0 {
			t.Errorf("%v Decoder.Decode: %v allocs", p.Type(), a)
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = AppendMarshal(buf[:0], p) }); a != 0 {
			t.Errorf("%v AppendMarshal: %v allocs", p.Type(), a)
		}
	}
}
