//go:build cgo

package asn1c

import (
	"strings"
	"sync"
	"testing"
	"time"

	"protolab/agents/dis"
	"protolab/agents/syntax"
	_ "protolab/agents/syntax/aper" // registers per, benchmarked beside asn1c's
)

// Benchmarks of every transfer syntax on every sample PDU (make bench):
// encode and decode ns/op and allocs/op, the encoded size as bytes/pdu, and
// on raw encode Table 2's composition (I integers, R reals, S octet strings).
// BenchmarkBars states the two bars as ratios.

var benchSyntaxes = []string{"raw", "ber", "der", "uper", "per", "skinny"}

func kebab(t dis.PDUType) string { return strings.ReplaceAll(strings.ToLower(t.String()), " ", "-") }

func BenchmarkEncode(b *testing.B) {
	for _, name := range benchSyntaxes {
		c := mustNew(b, name)
		for _, p := range syntax.Samples() {
			b.Run(name+"/"+kebab(p.Type()), func(b *testing.B) {
				buf := make([]byte, 0, 4096)
				var out []byte
				var err error
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if out, err = c.Append(buf[:0], p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(out)), "bytes/pdu")
				if name == "raw" {
					k := syntax.Compose(p)
					b.ReportMetric(float64(k.Integers), "I")
					b.ReportMetric(float64(k.Reals), "R")
					b.ReportMetric(float64(k.OctetStrings), "S")
				}
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range benchSyntaxes {
		c := mustNew(b, name)
		for _, p := range syntax.Samples() {
			enc, err := c.Append(nil, p)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/"+kebab(p.Type()), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := c.Decode(enc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBars: BER encode+decode of an Entity State PDU over raw's, and
// skinny's decode of a matching one over raw's (target: within 2x). The
// four timings are taken once, by hand (testing.Benchmark cannot run inside
// a benchmark), each for barTime.
func BenchmarkBars(b *testing.B) {
	barsOnce.Do(func() { bars = measureBars(b) })
	for i := 0; i < b.N; i++ {
	}
	b.ReportMetric(bars[1]/bars[0], "ber/raw-encode+decode")
	b.ReportMetric(bars[3]/bars[2], "skinny/raw-decode")
	b.ReportMetric(bars[0], "raw-ns")
	b.ReportMetric(bars[1], "ber-ns")
	b.ReportMetric(bars[2], "raw-decode-ns")
	b.ReportMetric(bars[3], "skinny-decode-ns")
}

const barTime = 500 * time.Millisecond

var (
	barsOnce sync.Once
	bars     [4]float64 // ns/op: raw enc+dec, ber enc+dec, raw dec, skinny dec
)

func measureBars(b *testing.B) [4]float64 {
	es := syntax.Samples()[0]
	nsPerOp := func(f func()) float64 {
		n, start := 0, time.Now()
		for time.Since(start) < barTime {
			for i := 0; i < 1000; i++ {
				f()
			}
			n += 1000
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	roundTrip := func(name string) float64 {
		c := mustNew(b, name)
		buf := make([]byte, 0, 4096)
		return nsPerOp(func() {
			enc, _ := c.Append(buf[:0], es)
			if _, err := c.Decode(enc); err != nil {
				b.Fatal(err)
			}
		})
	}
	decode := func(name string) float64 {
		c := mustNew(b, name)
		enc, _ := c.Append(nil, es)
		return nsPerOp(func() {
			if _, err := c.Decode(enc); err != nil {
				b.Fatal(err)
			}
		})
	}
	return [4]float64{roundTrip("raw"), roundTrip("ber"), decode("raw"), decode("skinny")}
}
