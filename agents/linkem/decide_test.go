package linkem

import (
	"math"
	"testing"
	"time"
)

// binomOK tells whether k successes in n trials are within z standard
// deviations of probability p.
func binomOK(k, n int, p, z float64) bool {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-float64(n)*p) <= z*sd+1e-9
}

func mustCompile(t testing.TB, c Config) *params {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return compile(c, 0)
}

func TestRandomLossRate(t *testing.T) {
	for _, loss := range []Percent{0, 0.1, 5, 20, 100} {
		p := mustCompile(t, Config{Loss: loss})
		d := NewDecider(1)
		const n = 100000
		lost := 0
		for i := 0; i < n; i++ {
			if dec, _, _ := d.Decide(p, 0, 100, 20, 0); dec.Fate == FateDrop {
				lost++
			}
		}
		if !binomOK(lost, n, loss.Prob(), 4) {
			t.Errorf("loss %s: %d of %d lost", loss, lost, n)
		}
	}
}

// Gilbert-Elliott: the long-run loss rate is the stationary
// pi_good*(1-k) + pi_bad*(1-h), and with 1-h=100%, 1-k=0 (simple
// Gilbert) loss bursts last 1/r packets on average.
func TestGilbertElliott(t *testing.T) {
	const n = 2000000
	models := []string{"1,30", "5,50,100,0", "2,20,60,1", "10,40,90,5", "0.5,80"}
	for _, s := range models {
		m, err := ParseGEModel(s)
		if err != nil {
			t.Fatal(err)
		}
		p := mustCompile(t, Config{LossGE: m})
		d := NewDecider(3)
		lost, bursts, inBurst := 0, 0, false
		for i := 0; i < n; i++ {
			dec, _, _ := d.Decide(p, 0, 100, 20, 0)
			if dec.Fate == FateDrop {
				lost++
				if !inBurst {
					bursts++
				}
				inBurst = true
			} else {
				inBurst = false
			}
		}
		want := m.StationaryLoss()
		got := float64(lost) / n
		// Losses are correlated, so allow a generous band around the
		// stationary rate (the burst structure inflates the variance).
		if math.Abs(got-want) > 0.05*want+0.0005 {
			t.Errorf("gemodel %s: loss rate %.5f, stationary %.5f", s, got, want)
		}
		if m.OneMinusH == 100 && m.OneMinusK == 0 {
			meanBurst := float64(lost) / float64(bursts)
			wantBurst := 1 / m.R.Prob()
			if math.Abs(meanBurst-wantBurst)/wantBurst > 0.03 {
				t.Errorf("gemodel %s: mean burst %.3f packets, want 1/r = %.3f", s, meanBurst, wantBurst)
			}
			t.Logf("gemodel %s: loss %.5f (stationary %.5f), mean burst %.3f (1/r %.3f)", s, got, want, meanBurst, wantBurst)
		} else {
			t.Logf("gemodel %s: loss %.5f (stationary %.5f)", s, got, want)
		}
	}
}

// A model switched on starts in the good state, like netem's.
func TestGilbertElliottStartsGood(t *testing.T) {
	m, _ := ParseGEModel("0,100,100,0") // never leaves good: never loses
	p := mustCompile(t, Config{LossGE: m})
	d := NewDecider(1)
	d.geBad = true // as if left over
	d.geWasOn = false
	for i := 0; i < 1000; i++ {
		if dec, _, _ := d.Decide(p, 0, 100, 20, 0); dec.Fate == FateDrop {
			t.Fatal("lost a packet in a model that stays good")
		}
	}
}

func TestReorderFraction(t *testing.T) {
	p := mustCompile(t, Config{Delay: Duration(10 * time.Millisecond), Reorder: 25})
	d := NewDecider(5)
	const n = 100000
	reordered := 0
	for i := 0; i < n; i++ {
		now := int64(i) * 1000
		dec, _, _ := d.Decide(p, now, 100, 20, 0)
		switch {
		case dec.Reordered:
			reordered++
			if dec.Release != now {
				t.Fatalf("reordered packet released at %d, arrival %d", dec.Release, now)
			}
		case dec.Release != now+int64(10*time.Millisecond):
			t.Fatalf("delayed packet released at %d, want %d", dec.Release, now+int64(10*time.Millisecond))
		}
	}
	if !binomOK(reordered, n, 0.25, 4) {
		t.Errorf("%d of %d reordered, want 25%%", reordered, n)
	}
}

func TestCorruptionDecisions(t *testing.T) {
	const n = 100000
	p := mustCompile(t, Config{Corrupt: 10})
	d := NewDecider(9)
	corrupted := 0
	for i := 0; i < n; i++ {
		dec, _, _ := d.Decide(p, 0, 120, 20, 0)
		if dec.Corrupt {
			corrupted++
			if dec.FlipBit < 20*8 || dec.FlipBit >= 120*8 {
				t.Fatalf("flip bit %d outside the payload bits [160, 960)", dec.FlipBit)
			}
		}
	}
	if !binomOK(corrupted, n, 0.10, 4) {
		t.Errorf("%d of %d corrupted, want 10%%", corrupted, n)
	}
	// Per-bit rate: the per-packet probability follows the packet length.
	for _, size := range []int{64, 1500} {
		p := mustCompile(t, Config{BER: 1e-5})
		d := NewDecider(11)
		corrupted := 0
		for i := 0; i < n; i++ {
			if dec, _, _ := d.Decide(p, 0, size, 20, 0); dec.Corrupt {
				corrupted++
			}
		}
		if want := BER(1e-5).PacketProb(size); !binomOK(corrupted, n, want, 4) {
			t.Errorf("ber 1e-5, %d bytes: %d of %d corrupted, want p=%.5f", size, corrupted, n, want)
		}
	}
	// No byte past the header: corrupt, but nothing to flip.
	dec, _, _ := NewDecider(1).Decide(mustCompile(t, Config{Corrupt: 100}), 0, 20, 20, 0)
	if !dec.Corrupt || dec.FlipBit != -1 {
		t.Errorf("header-only packet: %+v", dec)
	}
}

// Duplication and loss combine as in netem: expected deliveries per
// packet are (1-L)(1-D) + (1-L)D(2-L) + L*D.
func TestDuplicateSemantics(t *testing.T) {
	const n = 200000
	L, D := 0.2, 0.3
	p := mustCompile(t, Config{Loss: Percent(L * 100), Duplicate: Percent(D * 100)})
	d := NewDecider(13)
	delivered, dups := 0, 0
	for i := 0; i < n; i++ {
		orig, dup, has := d.Decide(p, 0, 100, 20, 0)
		if orig.Fate == FatePass {
			delivered++
		}
		if has {
			dups++
			if orig.Fate != FatePass {
				t.Fatal("a duplicate of a dropped packet")
			}
			if dup.Fate == FatePass {
				delivered++
			}
		}
	}
	want := (1-L)*(1-D) + (1-L)*D*(2-L) + L*D
	if got := float64(delivered) / n; math.Abs(got-want) > 0.005 {
		t.Errorf("delivered %.4f per packet, want %.4f", got, want)
	}
	if !binomOK(dups, n, (1-L)*D, 4) {
		t.Errorf("%d duplicates of %d, want p=%.3f", dups, n, (1-L)*D)
	}
}

func TestLimitOverflow(t *testing.T) {
	p := mustCompile(t, Config{Delay: Duration(time.Second), Limit: 10})
	d := NewDecider(1)
	for held := 0; held < 15; held++ {
		dec, _, _ := d.Decide(p, 0, 100, 20, held)
		if want := held >= 10; (dec.Fate == FateOverflow) != want {
			t.Errorf("held %d: fate %s", held, dec.Fate)
		}
	}
	// A duplicate counts the original it follows.
	p = mustCompile(t, Config{Delay: Duration(time.Second), Limit: 10, Duplicate: 100})
	orig, dup, has := NewDecider(1).Decide(p, 0, 100, 20, 9)
	if orig.Fate != FatePass || !has || dup.Fate != FateOverflow {
		t.Errorf("at 9 of 10 held: original %s, duplicate %v %s; want pass and overflow", orig.Fate, has, dup.Fate)
	}
}

func TestJitterReordersUnlessKeepOrder(t *testing.T) {
	for _, keep := range []bool{false, true} {
		p := mustCompile(t, Config{Delay: Duration(10 * time.Millisecond), Jitter: Duration(5 * time.Millisecond), KeepOrder: keep})
		d := NewDecider(21)
		last, inversions := int64(0), 0
		for i := 0; i < 10000; i++ {
			dec, _, _ := d.Decide(p, int64(i)*int64(100*time.Microsecond), 100, 20, 0)
			if dec.Release < last {
				inversions++
			}
			last = max(last, dec.Release)
		}
		if keep && inversions != 0 {
			t.Errorf("keep-order: %d releases before an earlier packet's", inversions)
		}
		if !keep && inversions < 1000 {
			t.Errorf("without keep-order only %d inversions: jitter should reorder", inversions)
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	c := Config{Delay: Duration(5 * time.Millisecond), Jitter: Duration(time.Millisecond), Distribution: DistNormal,
		Loss: 10, Reorder: 5, Corrupt: 5, Duplicate: 5}
	run := func(seed uint64) []Decision {
		p := mustCompile(t, c)
		d := NewDecider(seed)
		var out []Decision
		for i := 0; i < 1000; i++ {
			a, b, _ := d.Decide(p, int64(i), 100, 20, 0)
			out = append(out, a, b)
		}
		return out
	}
	a, b, other := run(77), run(77), run(78)
	same := func(x, y []Decision) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed gave different decisions")
	}
	if same(a, other) {
		t.Error("different seeds gave the same decisions")
	}
}
