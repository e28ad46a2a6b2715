package tp4

import (
	"fmt"
	"testing"
	"time"
)

// Transfers over a lossy, reordering, duplicating in-memory link complete
// byte-exact, with every expedited TSDU delivered, in every mode.
func TestSimImpairments(t *testing.T) {
	for _, imp := range []struct {
		name string
		p    Path
	}{
		{"clean", Path{}},
		{"loss 10 %", Path{Loss: 0.1}},
		{"reorder 30 %", Path{Reorder: 0.3, ReorderDelay: 150 * time.Millisecond}},
		{"duplicate 20 %", Path{Duplicate: 0.2}},
		{"all", Path{Loss: 0.1, Reorder: 0.3, ReorderDelay: 150 * time.Millisecond, Duplicate: 0.2}},
	} {
		for _, ack := range []AckMode{OneForOne, Selective} {
			for _, exp := range []ExpMode{ExpISO, ExpNBS} {
				t.Run(fmt.Sprintf("%s/%v/%v", imp.name, ack, exp), func(t *testing.T) {
					c := small()
					c.Ack, c.Expedited, c.TPDUSize, c.Window, c.Retransmit = ack, exp, 256, 8*256, 200*time.Millisecond
					c.MaxTransmissions = 64
					p := imp.p
					p.RateBitsPerSecond, p.Delay = 2e6, 20*time.Millisecond
					var worst SimResult
					for seed := uint64(1); seed <= 3; seed++ {
						res, err := Simulate(SimConfig{Sender: c, Receiver: c, Forward: p, Reverse: p,
							TSDUs: 12, TSDUSize: 3000, ExpeditedEvery: 3, Seed: seed})
						if err != nil || !res.Completed {
							t.Fatalf("seed %d: err %v, completed %v, meter %+v, sender %+v", seed, err, res.Completed, res.Meter, res.Sender)
						}
						if res.Meter.Expedited != 4 || res.Receiver.Octets != 12*3000 {
							t.Fatalf("seed %d: %d expedited, %d octets", seed, res.Meter.Expedited, res.Receiver.Octets)
						}
						if res.Receiver.Duplicates > worst.Receiver.Duplicates {
							worst = res
						}
					}
					if imp.name == "clean" && (worst.Sender.DTRetransmissions != 0 || worst.Receiver.Duplicates != 0) {
						t.Errorf("clean link: %d retransmissions, %d duplicates", worst.Sender.DTRetransmissions, worst.Receiver.Duplicates)
					}
					if imp.p.Duplicate > 0 && worst.Receiver.Duplicates == 0 {
						t.Error("duplicating link, but no duplicate DT counted")
					}
				})
			}
		}
	}
}

// satellite is the paper's channel: 64 kbit/s, 270 ms one way, the BER
// on both directions, UDP/IPv4 overhead on the wire.
func satellite(ber float64) Path {
	return Path{RateBitsPerSecond: 64000, Delay: 270 * time.Millisecond, BER: ber, Overhead: 28}
}

// Table 3 at BER 1e-3 (5 TSDUs of 10240 octets, TPDU 128, window 20 K,
// timer 650 ms): both mechanisms complete byte-exact; selective
// acknowledgement retransmits fewer DTs and holds more in the receive
// buffer (Figs. 6-8). Summed over seeds so that one unlucky draw does not
// decide.
func TestSimBER1e3(t *testing.T) {
	type sum struct {
		retx, dups     uint64
		eff, avg       float64
		max            int
		secs           float64
		runs, complete int
	}
	sums := map[AckMode]*sum{OneForOne: {}, Selective: {}}
	const seeds = 5
	for _, ack := range []AckMode{OneForOne, Selective} {
		c := Table3Config()
		c.Ack, c.PaceBitsPerSecond, c.MaxTransmissions = ack, 64000, 64
		for seed := uint64(1); seed <= seeds; seed++ {
			res, err := Simulate(SimConfig{Sender: c, Receiver: c, Forward: satellite(1e-3), Reverse: satellite(1e-3),
				TSDUs: 5, TSDUSize: 10240, Seed: seed})
			s := sums[ack]
			s.runs++
			if err != nil || !res.Completed {
				t.Errorf("%v seed %d: err %v, completed %v (%d TSDUs, corrupt %d)", ack, seed, err, res.Completed, res.Meter.TSDUs, res.Meter.Corrupt)
				continue
			}
			s.complete++
			s.retx += res.Sender.DTRetransmissions
			s.dups += res.Receiver.Duplicates
			s.eff += res.Efficiency
			s.avg += res.Receiver.RecvBufferAvg
			s.max = max(s.max, res.Receiver.RecvBufferMax)
			s.secs += res.Meter.TransferSeconds()
		}
	}
	for _, ack := range []AckMode{OneForOne, Selective} {
		s := sums[ack]
		n := float64(max(1, s.complete))
		t.Logf("BER 1e-3, %-11v: %d/%d complete; per run: %.0f DT retransmissions, %.0f duplicates received, efficiency %.3f, transfer %.1f s, receive buffer avg %.0f octets, max (over runs) %d octets",
			ack, s.complete, s.runs, float64(s.retx)/n, float64(s.dups)/n, s.eff/n, s.secs/n, s.avg/n, s.max)
	}
	o, s := sums[OneForOne], sums[Selective]
	if s.retx >= o.retx {
		t.Errorf("selective retransmitted %d DTs, one-for-one %d: want fewer", s.retx, o.retx)
	}
	if s.avg <= o.avg || s.max < o.max {
		t.Errorf("receive buffer selective avg %.0f max %d, one-for-one avg %.0f max %d: want more", s.avg, s.max, o.avg, o.max)
	}
	if s.eff <= o.eff {
		t.Errorf("efficiency selective %.3f, one-for-one %.3f: want higher", s.eff, o.eff)
	}
}

// Table 2 at expedited rate .33 (one expedited TSDU after every third):
// NBS beats ISO in throughput efficiency and per-octet delay (Figs. 4-5),
// and no expedited data beats both.
func TestSimExpedited(t *testing.T) {
	run := func(exp ExpMode, every int) SimResult {
		c := DefaultConfig()
		c.Expedited, c.PaceBitsPerSecond = exp, 64000
		res, err := Simulate(SimConfig{Sender: c, Receiver: c, Forward: satellite(1e-9), Reverse: satellite(1e-9),
			TSDUs: 21, TSDUSize: 10240, ExpeditedEvery: every, Seed: 1})
		if err != nil || !res.Completed {
			t.Fatalf("%v every %d: err %v completed %v", exp, every, err, res.Completed)
		}
		t.Logf("%v, expedited every %d: efficiency %.3f, per-octet delay %.2f ms, expedited delay %.0f ms, %d expedited",
			exp, every, res.Efficiency, res.Meter.PerOctetDelay*1e3, res.Meter.ExpDelayMean*1e3, res.Meter.Expedited)
		return res
	}
	iso, nbs, none := run(ExpISO, 3), run(ExpNBS, 3), run(ExpISO, 0)
	if nbs.Efficiency <= iso.Efficiency || nbs.Meter.PerOctetDelay >= iso.Meter.PerOctetDelay {
		t.Errorf("NBS efficiency %.3f delay %g, ISO %.3f %g: want NBS better in both",
			nbs.Efficiency, nbs.Meter.PerOctetDelay, iso.Efficiency, iso.Meter.PerOctetDelay)
	}
	if none.Efficiency < nbs.Efficiency {
		t.Errorf("no expedited data %.3f below NBS %.3f", none.Efficiency, nbs.Efficiency)
	}
	if nbs.Meter.Expedited != 7 || iso.Meter.Expedited != 7 {
		t.Errorf("expedited delivered: NBS %d ISO %d, want 7", nbs.Meter.Expedited, iso.Meter.Expedited)
	}
}

// The same seed gives the same run.
func TestSimDeterministic(t *testing.T) {
	c := Table3Config()
	c.PaceBitsPerSecond = 64000
	cfg := SimConfig{Sender: c, Receiver: c, Forward: satellite(1e-4), Reverse: satellite(1e-4), TSDUs: 2, TSDUSize: 10240, Seed: 7}
	a, err1 := Simulate(cfg)
	b, err2 := Simulate(cfg)
	if err1 != nil || err2 != nil || a.Elapsed != b.Elapsed || a.Sender.DTRetransmissions != b.Sender.DTRetransmissions {
		t.Errorf("runs differ: %v/%v, %v/%v", a.Elapsed, b.Elapsed, a.Sender.DTRetransmissions, b.Sender.DTRetransmissions)
	}
}
