package converter

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"protolab/agents/bundle"
)

// reliableCentral is C_2 in reliable mode with hosts 1 and 2 in packet
// address 5 and host 3 in 6 (no C_1s: joins are acknowledged at once).
func reliableCentral(t testing.TB) (*Central, *[]sent, *Stats, time.Time) {
	c, out, st := central(t, 0, 10e6)
	c.cfg.Reliable = true
	c = NewCentral(c.cfg, st)
	c.Send = func(b []byte, to netip.AddrPort) { *out = append(*out, sent{append([]byte(nil), b...), to}) }
	now := time.Now()
	c.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 1, Group: 5, Seq: 1}), hostAddr(1), now)
	c.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 2, Group: 5, Seq: 1}), hostAddr(2), now)
	c.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 3, Group: 6, Seq: 1}), hostAddr(3), now)
	c.Tick(now)
	*out = nil
	return c, out, st, now
}

// withSeq closes a host's data bundle with its CtlSeq, as RunH does.
func withSeq(sender int, seq uint32, addrs ...uint16) []byte {
	var w bundle.Writer
	w.Begin(make([]byte, 0, 1500), 1, 0)
	p := make([]byte, 148)
	for i, a := range addrs {
		PutHeader(p, sender, uint32(i), time.Now(), bundle.Priority(a))
		w.AddAddr(a, p)
	}
	w.AddAddr(bundle.ControlAddr, bundle.Control{Type: bundle.CtlSeq, Host: uint8(sender), Seq: seq}.AppendPayload(nil))
	w.SetMask(bundle.Bit(sender))
	return w.Finish()
}

// toHosts decodes C_2's bundles toward the hosts: data messages as (interest
// bits, priority) and control messages by type.
type hostMsg struct {
	mask bundle.Mask
	ctl  bundle.Control
	data bool
	prio bool
}

func toHosts(t *testing.T, out []sent) (bundles [][]hostMsg) {
	t.Helper()
	for _, s := range out {
		var r bundle.Reader
		if err := r.Open(s.b); err != nil {
			t.Fatal(err)
		}
		var msgs []hostMsg
		for {
			m, p, ok := r.NextMask()
			if !ok {
				break
			}
			if _, _, _, prio, ok := Header(p); ok {
				msgs = append(msgs, hostMsg{mask: m, data: true, prio: prio})
				continue
			}
			ctl, err := bundle.ParseControl(p)
			if err != nil {
				t.Fatalf("undecodable message %x", p)
			}
			msgs = append(msgs, hostMsg{mask: m, ctl: ctl})
		}
		bundles = append(bundles, msgs)
	}
	return bundles
}

func TestReliableCentralAcksNumbersAndResendsToTheHostsOwing(t *testing.T) {
	c, out, st, now := reliableCentral(t)
	// host 1: a priority and a low-priority message to address 5 (host 2), bundle number 7
	c.From(withSeq(1, 7, 5*32+1, 5*32+2), hostAddr(1), now)
	c.Tick(now)
	b := toHosts(t, *out)
	if len(b) != 1 || len(b[0]) != 4 {
		t.Fatalf("bundles %+v", b)
	}
	ack, prio, low, seq := b[0][0], b[0][1], b[0][2], b[0][3]
	if ack.ctl.Type != bundle.CtlRAck || ack.ctl.Seq != 7 || ack.mask != bundle.Bit(1) {
		t.Fatalf("host 1 not acknowledged: %+v", ack)
	}
	if !prio.data || !prio.prio || prio.mask != bundle.Bit(2) || !low.data || low.prio {
		t.Fatalf("data %+v %+v", prio, low)
	}
	if seq.ctl.Type != bundle.CtlSeq || seq.mask != bundle.Bit(2) {
		t.Fatalf("closing number %+v (want CtlSeq owed by host 2 only)", seq)
	}
	// no acknowledgement from host 2: after the timeout the priority message alone goes again, same number
	*out = nil
	c.Tick(now.Add(RTO(c.cfg.Interval) - time.Millisecond))
	if len(*out) != 0 {
		t.Fatal("resent before the timeout")
	}
	c.Tick(now.Add(RTO(c.cfg.Interval)))
	b = toHosts(t, *out)
	if len(b) != 1 || len(b[0]) != 2 || !b[0][0].prio || b[0][0].mask != bundle.Bit(2) ||
		b[0][1].ctl.Type != bundle.CtlSeq || b[0][1].ctl.Seq != seq.ctl.Seq {
		t.Fatalf("retransmission %+v", b)
	}
	if st.Retransmitted != 1 {
		t.Fatalf("retransmitted %d", st.Retransmitted)
	}
	// host 2 acknowledges: nothing more
	c.From(controlBundle(bundle.Control{Type: bundle.CtlRAck, Host: 2, Seq: seq.ctl.Seq}), hostAddr(2), now)
	*out = nil
	for i := 2; i < 10; i++ {
		c.Tick(now.Add(time.Duration(i) * RTO(c.cfg.Interval)))
	}
	if len(*out) != 0 || st.Dropped[DropGaveUp] != 0 {
		t.Fatalf("after the acknowledgement: %d bundles, dropped %v", len(*out), st.Dropped)
	}
	if len(st.AckedAfter) != 1 || st.AckedAfter[2] != 1 {
		t.Fatalf("acknowledged after %v sendings (want once after 2)", st.AckedAfter)
	}
	// host 1 sends number 7 again (it missed the ack): acknowledged again, not delivered twice
	c.From(withSeq(1, 7, 5*32+1), hostAddr(1), now)
	c.Tick(now.Add(10 * RTO(c.cfg.Interval)))
	b = toHosts(t, *out)
	if len(b) != 1 || len(b[0]) != 1 || b[0][0].ctl.Type != bundle.CtlRAck || st.Duplicates != 1 {
		t.Fatalf("repeat: %+v, duplicates %d", b, st.Duplicates)
	}
}

func TestReliableCentralGivesUp(t *testing.T) {
	c, out, st, now := reliableCentral(t)
	c.From(withSeq(1, 1, 5*32+1, 5*32+3), hostAddr(1), now)
	// ticking every millisecond: the sendings go at 0, then after timeouts of 20, 40, 80, 160 and 320 ms
	// (doubling from RTO), and the last waits maxRTO before the give-up
	rto := RTO(c.cfg.Interval)
	var resentAt []time.Duration
	for d := time.Duration(0); d <= 3*time.Second; d += time.Millisecond {
		*out = nil
		before := st.Retransmitted
		c.Tick(now.Add(d))
		if st.Retransmitted != before {
			resentAt = append(resentAt, d)
		}
		if st.Dropped[DropGaveUp] > 0 && resentAt[len(resentAt)-1] != d {
			want := resentAt[len(resentAt)-1] + maxRTO
			if d != want {
				t.Fatalf("gave up at %v, want %v (last sending %v + maxRTO)", d, want, resentAt[len(resentAt)-1])
			}
			break
		}
	}
	var want []time.Duration
	at, wait := time.Duration(0), rto
	for range reliableTries - 1 {
		at += wait
		want = append(want, at)
		wait = min(2*wait, maxRTO)
	}
	if fmt.Sprint(resentAt) != fmt.Sprint(want) {
		t.Fatalf("resent at %v, want %v", resentAt, want)
	}
	if st.Retransmitted != 2*(reliableTries-1) || st.Dropped[DropGaveUp] != 2 {
		t.Fatalf("retransmitted %d, dropped %v (want %d resent, 2 given up)", st.Retransmitted, st.Dropped,
			2*(reliableTries-1))
	}
	if total := want[len(want)-1] + maxRTO; total >= seenFor {
		t.Fatalf("a receiver forgets a number (%v) before its sender gives up (%v)", seenFor, total)
	}
}

func TestReliableReserveKeepsRoomForTheNumber(t *testing.T) {
	var w bundle.Writer
	w.Begin(make([]byte, 0, 300), 1, 300)
	p := make([]byte, 100)
	if !w.Reserve(bundle.AddrBytes, ctlPayload) {
		t.Fatal("no room in an empty bundle")
	}
	n := 0
	for w.AddAddr(1, p) {
		n++
	}
	w.Reserve(0, 0)
	if !w.AddAddr(bundle.ControlAddr, bundle.Control{Type: bundle.CtlSeq, Seq: 1}.AppendPayload(nil)) {
		t.Fatalf("no room left for the closing number after %d messages", n)
	}
	b := w.Finish()
	if len(b) > 300 {
		t.Fatalf("bundle %d B > 300", len(b))
	}
	var r bundle.Reader
	if err := r.Open(b); err != nil {
		t.Fatal(err)
	}
	if ctl, _, ok := lastSeq(&r, false); !ok || ctl.Seq != 1 {
		t.Fatal("closing number not found")
	}
}

// FuzzCentralFrom: whatever arrives from a host, C_2 in reliable mode counts
// or forwards it and never panics (seeded with well-formed bundles).
func FuzzCentralFrom(f *testing.F) {
	f.Add(withSeq(1, 7, 5*32+1, 5*32+2))
	f.Add(controlBundle(bundle.Control{Type: bundle.CtlRAck, Host: 2, Seq: 1}))
	f.Add(dataBundle(1, 5*32+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _, _, now := reliableCentral(t)
		c.From(b, hostAddr(1), now)
		c.From(b, hostAddr(2), now)
		for i := 0; i < 3; i++ {
			c.Tick(now.Add(time.Duration(i) * RTO(c.cfg.Interval)))
		}
		// the outbound path, with C_1s: the same bytes from a host and from a C_1
		o, _, _ := central(t, 2, 10e6)
		o.cfg.Outbound = true
		o.From(controlBundle(bundle.Control{Type: bundle.CtlJoin, Host: 1, Group: 5, Seq: 1}), hostAddr(1), now)
		o.From(b, hostAddr(1), now)
		o.From(b, o.cfg.C1s[0], now)
		o.Tick(now)
	})
}
