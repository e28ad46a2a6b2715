//go:build cgo

package dishost

import (
	"testing"
	"time"
)

// Every transfer syntax end to end through the generator and a processor,
// and a malformed datagram counted as a drop with its reason.
func TestSyntaxThroughGeneratorAndProcessor(t *testing.T) {
	plan := Plan{Groups: 2, PerGroup: 32, Base: DefaultBase}
	mix := Mix{}
	for _, ty := range mixNames {
		mix[ty] = 1
	}
	for _, name := range []string{"raw", "ber", "der", "uper", "skinny"} {
		gen, err := NewGenerator(GenConfig{Plan: plan, Entities: 3, Mix: mix, Site: 1, App: 1, Seed: 1, Syntax: name})
		if err != nil {
			t.Fatal(err)
		}
		p := NewProcessor(plan, plan.Groups)
		if err := p.SetSyntax(name); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, MaxSize)
		now := time.Now()
		for i := 0; i < 200; i++ {
			n, _, err := gen.Next(buf, now)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !p.Process(buf[:n], now) {
				t.Fatalf("%s: datagram %d (% x) dropped: %v", name, i, buf[:n], p.Stats.Dropped)
			}
		}
		if name == "skinny" && (p.Stats.Skinny.Matched != 200 || p.Stats.Skinny.Fallback != 0) {
			t.Errorf("skinny: %+v, want 200 matched", p.Stats.Skinny)
		}
		if name != "raw" {
			junk := []byte{0, 1, 0xA1, 0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			if p.Process(junk, now) {
				t.Errorf("%s accepted garbage", name)
			}
			if p.Stats.Dropped[DropSyntaxPrefix+"truncated"]+p.Stats.Dropped[DropSyntaxPrefix+"malformed"] != 1 {
				t.Errorf("%s: garbage not counted with a reason: %v", name, p.Stats.Dropped)
			}
		}
	}
	if _, err := NewGenerator(GenConfig{Plan: plan, Entities: 1, Size: 200, Syntax: "ber"}); err == nil {
		t.Error("ber with --size accepted")
	}
	if err := CheckSyntax("xer"); err == nil {
		t.Error("unknown syntax accepted")
	}
}
