package tp4

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

var t0 = SimEpoch

// small is a fast configuration for unit tests: TPDU 128 (120 octets of
// data per DT), credit 16, no pacing.
func small() Config {
	c := DefaultConfig()
	c.TPDUSize, c.Window, c.SendBuffer, c.RecvBuffer = 128, 16*128, 64*1024, 64*1024
	c.Retransmit = time.Second
	return c
}

// drain takes every TPDU an endpoint gives at now, decoded.
func drain(t *testing.T, ep Endpoint, now time.Time) []TPDU {
	t.Helper()
	var out []TPDU
	for b := ep.Output(now); b != nil; b = ep.Output(now) {
		p, err := Decode(b)
		if err != nil {
			t.Fatalf("endpoint sent a TPDU it cannot decode: %v", err)
		}
		out = append(out, p)
	}
	return out
}

func deliver(t *testing.T, to Endpoint, ps []TPDU, now time.Time) {
	t.Helper()
	for _, p := range ps {
		to.Input(Encode(p), now)
	}
}

func types(ps []TPDU) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Type.String())
	}
	return strings.Join(s, " ")
}

// pair connects a sender and a receiver directly.
func pair(t *testing.T, sc, rc Config) (*Sender, *Receiver) {
	t.Helper()
	s, err := NewSender(sc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(rc)
	if err != nil {
		t.Fatal(err)
	}
	s.Connect(t0)
	deliver(t, r, drain(t, s, t0), t0)
	back := drain(t, r, t0)
	if got := types(back); got != "CC AK" {
		t.Fatalf("receiver answered the CR with %q, want CC AK", got)
	}
	deliver(t, s, back, t0)
	if !s.Open() || !r.Open() {
		t.Fatalf("not open: sender %v, receiver %v", s.state, r.state)
	}
	return s, r
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sAck, rAck     AckMode
		sSize, rSize   int
		wantSel        bool
		wantSize       int
		rWindow, wantC int
	}{
		{"both selective", Selective, Selective, 1024, 1024, true, 1024, 12 * 1024, 12},
		{"sender only", Selective, OneForOne, 1024, 1024, false, 1024, 12 * 1024, 12},
		{"receiver only", OneForOne, Selective, 1024, 1024, false, 1024, 12 * 1024, 12},
		{"smaller receiver TPDU", OneForOne, OneForOne, 1024, 128, false, 128, 20 * 1024, 160},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, rc := DefaultConfig(), DefaultConfig()
			sc.Ack, rc.Ack, sc.TPDUSize, rc.TPDUSize, sc.Window, rc.Window = tc.sAck, tc.rAck, tc.sSize, tc.rSize, 64*1024, tc.rWindow
			s, r := pair(t, sc, rc)
			if s.selective != tc.wantSel || r.selective != tc.wantSel {
				t.Errorf("selective: sender %v receiver %v, want %v", s.selective, r.selective, tc.wantSel)
			}
			if s.size != tc.wantSize || r.size != tc.wantSize {
				t.Errorf("TPDU size: sender %d receiver %d, want %d", s.size, r.size, tc.wantSize)
			}
			if got := int(s.edge - s.una); got != tc.wantC {
				t.Errorf("credit %d, want %d", got, tc.wantC)
			}
		})
	}
}

// The CR is repeated on its timer and the connection given up after N.
func TestConnectGivesUp(t *testing.T) {
	c := small()
	c.MaxTransmissions = 3
	s, _ := NewSender(c)
	s.Connect(t0)
	now := t0
	for i := 0; i < 3; i++ {
		if got := types(drain(t, s, now)); got != "CR" {
			t.Fatalf("at %v: %q, want CR", now.Sub(t0), got)
		}
		if d := s.Deadline(now); !d.Equal(now.Add(c.Retransmit)) {
			t.Fatalf("deadline %v, want %v", d.Sub(t0), now.Add(c.Retransmit).Sub(t0))
		}
		now = now.Add(c.Retransmit)
	}
	if got := drain(t, s, now); len(got) != 0 || s.Err() == nil || !s.Done() {
		t.Fatalf("after 3 CRs: %q, err %v, done %v", types(got), s.Err(), s.Done())
	}
}

// The sender never has more DTs outstanding than the credit.
func TestWindow(t *testing.T) {
	c := small()
	c.Window = 4 * 128
	s, r := pair(t, c, c)
	s.Submit(make([]byte, 10*120), t0)
	out := drain(t, s, t0)
	if len(out) != 4 || out[3].Seq != 3 {
		t.Fatalf("sent %d DTs (%q), want 4", len(out), types(out))
	}
	deliver(t, r, out[:2], t0)
	deliver(t, s, drain(t, r, t0), t0)
	if out := drain(t, s, t0); len(out) != 2 || out[0].Seq != 4 || out[1].Seq != 5 {
		t.Fatalf("after AK of 2: %+v, want DT 4 and 5", out)
	}
}

// A TSDU is split into DTs with EOT on the last and delivered whole.
func TestSegmentation(t *testing.T) {
	s, r := pair(t, small(), small())
	var got [][]byte
	r.OnTSDU = func(b []byte, _ time.Time) { got = append(got, b) }
	a, b := bytes.Repeat([]byte("a"), 250), bytes.Repeat([]byte("b"), 120)
	s.Submit(a, t0)
	s.Submit(b, t0)
	s.Submit(nil, t0)
	out := drain(t, s, t0)
	var eot []bool
	for _, p := range out {
		eot = append(eot, p.EOT)
	}
	if want := []bool{false, false, true, true, true}; len(eot) != 5 || !equalBools(eot, want) {
		t.Fatalf("EOT flags %v, want %v", eot, want)
	}
	deliver(t, r, out, t0)
	if len(got) != 3 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) || len(got[2]) != 0 {
		t.Fatalf("delivered %d TSDUs", len(got))
	}
}

func equalBools(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// The receiver's AKs per sec. 3: one-for-one confirms only up to the gap;
// selective adds the DT after the gap as the optional sequence number.
func TestAcknowledgements(t *testing.T) {
	for _, mode := range []AckMode{OneForOne, Selective} {
		t.Run(mode.String(), func(t *testing.T) {
			c := small()
			c.Ack = mode
			s, r := pair(t, c, c)
			var n int
			r.OnTSDU = func([]byte, time.Time) { n++ }
			s.Submit(make([]byte, 5*120), t0) // DT 0..4, one TSDU
			dts := drain(t, s, t0)
			deliver(t, r, []TPDU{dts[0], dts[1], dts[3], dts[4]}, t0) // DT 2 lost
			aks := drain(t, r, t0)
			var got []string
			for _, a := range aks {
				s := "AK" + itoa(a.Seq)
				if a.HasSel {
					s += "+" + itoa(a.Sel)
				}
				got = append(got, s)
			}
			want := "AK1 AK2 AK2 AK2"
			if mode == Selective {
				want = "AK1 AK2 AK2+3 AK2+4"
			}
			if strings.Join(got, " ") != want {
				t.Errorf("AKs %q, want %q", strings.Join(got, " "), want)
			}
			if st := r.Stats(t0); st.RecvBufferMax != 4*120 || st.OutOfOrder != 2 {
				t.Errorf("receive buffer max %d (want %d), out of order %d", st.RecvBufferMax, 4*120, st.OutOfOrder)
			}
			deliver(t, r, dts[2:3], t0)
			if aks := drain(t, r, t0); len(aks) != 1 || aks[0].Seq != 5 || n != 1 {
				t.Errorf("after the gap filled: %+v, %d TSDUs", aks, n)
			}
			if st := r.Stats(t0); st.RecvBufferNow != 0 {
				t.Errorf("receive buffer %d after delivery", st.RecvBufferNow)
			}
		})
	}
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

// One-for-one: the DTs after a lost one time out too and go again;
// selective: only the lost one.
func TestRetransmissions(t *testing.T) {
	for _, tc := range []struct {
		mode AckMode
		want []uint32
	}{{OneForOne, []uint32{1, 2, 3, 4}}, {Selective, []uint32{1}}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			c := small()
			c.Ack = tc.mode
			s, r := pair(t, c, c)
			s.Submit(make([]byte, 5*120), t0)
			dts := drain(t, s, t0)
			deliver(t, r, []TPDU{dts[0], dts[2], dts[3], dts[4]}, t0) // DT 1 lost
			deliver(t, s, drain(t, r, t0), t0)
			later := t0.Add(c.Retransmit)
			if got := drain(t, s, later.Add(-time.Millisecond)); len(got) != 0 {
				t.Fatalf("sent %q before the timer ran out", types(got))
			}
			var seqs []uint32
			for _, p := range drain(t, s, later) {
				seqs = append(seqs, p.Seq)
			}
			if !equalSeqs(seqs, tc.want) {
				t.Errorf("retransmitted %v, want %v", seqs, tc.want)
			}
			if st := s.Stats(later); st.DTRetransmissions != uint64(len(tc.want)) {
				t.Errorf("counted %d retransmissions", st.DTRetransmissions)
			}
			if tc.mode == Selective {
				if st := s.Stats(later); st.SendBufferNow != 120 {
					t.Errorf("send buffer %d octets, want 120 (three DTs selectively acknowledged)", st.SendBufferNow)
				}
			}
		})
	}
}

func equalSeqs(a, b []uint32) bool {
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

// Sec. 2: with an expedited TSDU between two normal ones, NBS lets the
// normal data handed over before it go while the EA is awaited; ISO
// sends nothing new until the EA is back. Both deliver the expedited TSDU
// before the normal data handed over after it.
func TestExpeditedMechanisms(t *testing.T) {
	for _, tc := range []struct {
		mode       ExpMode
		before     string // sent before the EA
		afterFirst uint32 // first DT sent after the EA
	}{
		{ExpNBS, "ED DT DT DT", 3},
		{ExpISO, "ED", 0},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			c := small()
			c.Expedited = tc.mode
			s, r := pair(t, c, c)
			var order []string
			r.OnTSDU = func(b []byte, _ time.Time) { order = append(order, string(b[:1])) }
			r.OnExpedited = func(b []byte, _ time.Time) { order = append(order, "X") }
			s.Submit(bytes.Repeat([]byte("A"), 3*120), t0) // DT 0..2
			if err := s.Expedite([]byte("X"), t0); err != nil {
				t.Fatal(err)
			}
			s.Submit(bytes.Repeat([]byte("B"), 2*120), t0) // DT 3..4
			out := drain(t, s, t0)
			if got := types(out); got != tc.before {
				t.Fatalf("before the EA: %q, want %q", got, tc.before)
			}
			deliver(t, r, out, t0)
			back := drain(t, r, t0)
			var ea []TPDU
			for _, p := range back {
				if p.Type == EA {
					ea = append(ea, p)
				}
			}
			if len(ea) != 1 || ea[0].Seq != 0 {
				t.Fatalf("receiver answered %q", types(back))
			}
			if got := drain(t, s, t0); len(got) != 0 {
				t.Fatalf("before the EA arrived: %q", types(got))
			}
			deliver(t, s, back, t0)
			after := drain(t, s, t0)
			if len(after) == 0 || after[0].Seq != tc.afterFirst {
				t.Fatalf("after the EA: %+v, want DT %d first", after, tc.afterFirst)
			}
			deliver(t, r, after, t0)
			if got := strings.Join(order, ""); got != "XAB" {
				t.Errorf("delivery order %q, want XAB", got)
			}
			if st := s.Stats(t0); st.EDAcked != 1 {
				t.Errorf("EDs acknowledged %d", st.EDAcked)
			}
		})
	}
}

// An ED whose EA is lost is repeated; the receiver delivers it once.
func TestExpeditedRepeat(t *testing.T) {
	s, r := pair(t, small(), small())
	var n int
	r.OnExpedited = func([]byte, time.Time) { n++ }
	_ = s.Expedite([]byte("x"), t0)
	deliver(t, r, drain(t, s, t0), t0)
	drain(t, r, t0) // EA lost
	later := t0.Add(small().Retransmit)
	ed := drain(t, s, later)
	if types(ed) != "ED" {
		t.Fatalf("at the timer: %q", types(ed))
	}
	deliver(t, r, ed, later)
	deliver(t, s, drain(t, r, later), later)
	if n != 1 || s.edOut != nil || r.Stats(later).EDDuplicates != 1 {
		t.Errorf("delivered %d, outstanding %v, duplicates %d", n, s.edOut, r.Stats(later).EDDuplicates)
	}
	if err := s.Expedite(make([]byte, MaxExpedited+1), later); err == nil {
		t.Error("an expedited TSDU of 17 octets was taken")
	}
}

// Malformed and foreign TPDUs are counted drops.
func TestDrops(t *testing.T) {
	s, r := pair(t, small(), small())
	for _, b := range [][]byte{nil, {0x01}, {0x07, 0x30, 0, 0, 0, 0, 0, 0}, {0x09, 0xf0, 0, 1}} {
		s.Input(b, t0)
		r.Input(b, t0)
	}
	r.Input(Encode(TPDU{Type: DT, DstRef: r.localRef + 1, Seq: 0, EOT: true}), t0)
	r.Input(Encode(TPDU{Type: DT, DstRef: r.localRef, Seq: 1000, EOT: true}), t0)
	r.Input(Encode(TPDU{Type: CR, SrcRef: s.localRef + 1, Class: ClassOption}), t0)
	st := r.Stats(t0)
	want := map[string]uint64{"short": 2, "type": 1, "length": 1, "ref": 1, "window": 1, "busy": 1}
	for k, v := range want {
		if st.Dropped[k] != v {
			t.Errorf("receiver dropped[%s] = %d, want %d (all: %v)", k, st.Dropped[k], v, st.Dropped)
		}
	}
	if ss := s.Stats(t0); ss.Dropped["short"] != 2 || ss.Dropped["type"] != 1 {
		t.Errorf("sender drops %v", ss.Dropped)
	}
}

// Disconnect: DR once all is acknowledged, DC back; a repeated DR is
// answered again.
func TestDisconnect(t *testing.T) {
	s, r := pair(t, small(), small())
	s.Submit([]byte("0123456789ab"), t0)
	s.Close(t0)
	dt := drain(t, s, t0)
	if types(dt) != "DT" {
		t.Fatalf("%q, want DT (no DR before the AK)", types(dt))
	}
	deliver(t, r, dt, t0)
	deliver(t, s, drain(t, r, t0), t0)
	dr := drain(t, s, t0)
	if types(dr) != "DR" || dr[0].Reason != ReasonNormal {
		t.Fatalf("%+v, want a normal DR", dr)
	}
	deliver(t, r, dr, t0)
	deliver(t, r, dr, t0)
	dc := drain(t, r, t0)
	if types(dc) != "DC DC" || !r.Done() {
		t.Fatalf("receiver answered %q, done %v", types(dc), r.Done())
	}
	deliver(t, s, dc, t0)
	if !s.Done() || s.Err() != nil {
		t.Fatalf("sender done %v err %v", s.Done(), s.Err())
	}
}

// The receiver repeats its AK on the window timer and gives up after the
// inactivity time.
func TestReceiverTimers(t *testing.T) {
	c := small()
	c.WindowTimer, c.Inactivity = 2*time.Second, 5*time.Second
	_, r := pair(t, c, c)
	if d := r.Deadline(t0); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("deadline %v", d.Sub(t0))
	}
	if got := types(drain(t, r, t0.Add(2*time.Second))); got != "AK" {
		t.Fatalf("window timer: %q", got)
	}
	if got := types(drain(t, r, t0.Add(5*time.Second))); got != "DR" || r.Err() == nil {
		t.Fatalf("inactivity: %q, err %v", got, r.Err())
	}
}

func TestExpeditedEvery(t *testing.T) {
	for rate, want := range map[float64]int{.33: 3, .14: 7, .08: 12, .0588: 17, .0455: 22, .037: 27, .03: 33, 0: 0, 1: 1} {
		if got := ExpeditedEvery(rate); got != want {
			t.Errorf("ExpeditedEvery(%g) = %d, want %d", rate, got, want)
		}
	}
}

func TestLossProbability(t *testing.T) {
	if p := LossProbability(1e-3, 128); p < 0.6410 || p > 0.6411 {
		t.Errorf("BER 1e-3, 128 octets: %g, want 1-(0.999)^1024 = 0.64103", p)
	}
	if p := LossProbability(0, 1024); p != 0 {
		t.Errorf("BER 0: %g", p)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.TPDUSize, c.Retransmit = 1000, 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "TPDU size 1000") || !strings.Contains(err.Error(), "timers") {
		t.Errorf("Validate = %v", err)
	}
}
