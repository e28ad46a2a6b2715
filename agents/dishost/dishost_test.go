package dishost

import (
	"context"
	"math"
	"net/netip"
	"protolab/agents/syntax"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/dis"
	"protolab/agents/internal/measure"
)

func plan(groups int) Plan { return Plan{Groups: groups, PerGroup: 32, Base: DefaultBase} }

func TestPlanValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Plan
		err  string
	}{
		{"thesis 2048 groups", Plan{2048, 32, DefaultBase}, ""},
		{"10000 groups need fewer per group", Plan{10000, 32, DefaultBase}, "at most 6"},
		{"10000 groups at 6", Plan{10000, 6, DefaultBase}, ""},
		{"no groups", Plan{0, 32, DefaultBase}, "at least 1"},
		{"unicast base", Plan{1, 32, netip.MustParseAddr("10.0.0.1")}, "not an IPv4 multicast"},
		{"past the range", Plan{300, 1, netip.MustParseAddr("239.255.255.0")}, "run past"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestAddressMapping(t *testing.T) {
	p := plan(2048)
	for _, tc := range []struct {
		g, e  int
		addr  dis.MessageAddress
		group string
	}{
		{0, 0, 0, "239.192.0.0"},
		{1, 0, 32, "239.192.0.1"},
		{1, 33, 33, "239.192.0.1"},
		{2047, 31, 65535, "239.192.7.255"},
		{300, 5, 9605, "239.192.1.44"},
	} {
		a := p.MessageAddress(tc.g, tc.e)
		if a != tc.addr || p.PacketAddress(a) != tc.g || int(a.PacketAddress()) != tc.g || p.Group(tc.g).String() != tc.group {
			t.Errorf("g=%d e=%d: address %d (want %d), packet address %d, group %v (want %s)",
				tc.g, tc.e, a, tc.addr, p.PacketAddress(a), p.Group(tc.g), tc.group)
		}
	}
}

func TestJoined(t *testing.T) {
	for _, tc := range []struct {
		groups int
		share  float64
		want   int
	}{{10, 0.1, 1}, {10, 1, 10}, {10000, 0.2, 2000}, {20, 0.01, 1}, {50, 0.5, 25}} {
		if got := Joined(tc.groups, tc.share); got != tc.want {
			t.Errorf("Joined(%d, %v) = %d, want %d", tc.groups, tc.share, got, tc.want)
		}
	}
}

func TestParseMix(t *testing.T) {
	m, err := ParseMix("entity_state=90, fire=5,detonation=5")
	if err != nil || math.Abs(m[dis.TypeEntityState]-0.9) > 1e-12 || math.Abs(m[dis.TypeFire]-0.05) > 1e-12 {
		t.Fatalf("mix %v, %v", m, err)
	}
	for _, bad := range []string{"", "tank=1", "fire", "fire=-1", "fire=x", "fire=0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
}

func TestGeneratorSizes(t *testing.T) {
	buf := make([]byte, MaxSize)
	now := time.Now()
	for _, tc := range []struct {
		size    int
		typ     dis.PDUType
		pduLen  int
		wantErr bool
	}{
		{0, dis.TypeEntityState, 144, false},
		{96, dis.TypeCollision, 60, false},
		{128, dis.TypeCollision, 60, false},
		{146, dis.TypeEntityState, 144, false},
		{160, dis.TypeEntityState, 144, false},
		{256, dis.TypeEntityState, 240, false},
		{2048, dis.TypeEntityState, 2032, false},
		{8192, dis.TypeEntityState, 144 + 255*16, false},
		{61, 0, 0, true},
		{8193, 0, 0, true},
	} {
		g, err := NewGenerator(GenConfig{Plan: plan(4), Entities: 3, Size: tc.size, Mix: Mix{dis.TypeEntityState: 1}})
		if tc.wantErr {
			if err == nil {
				t.Errorf("size %d accepted", tc.size)
			}
			continue
		}
		if err != nil {
			t.Fatalf("size %d: %v", tc.size, err)
		}
		n, group, err := g.Next(buf, now)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.size
		if want == 0 {
			want = 2 + 144
		}
		h, err := dis.PeekHeader(buf[2:n])
		if n != want || err != nil || h.PDUType != tc.typ || int(h.Length) != tc.pduLen || group != 0 {
			t.Errorf("size %d: n=%d type=%v len=%d group=%d err=%v", tc.size, n, h.PDUType, h.Length, group, err)
		}
		p := NewProcessor(plan(4), 4)
		if !p.Process(buf[:n], now.Add(time.Millisecond)) {
			t.Errorf("size %d: own message dropped: %v", tc.size, p.Stats.Dropped)
		}
	}
}

func TestGeneratorMixGroupsHeartbeat(t *testing.T) {
	g, err := NewGenerator(GenConfig{Plan: plan(10), Entities: 5, Mix: Mix{dis.TypeEntityState: 0.5, dis.TypeFire: 0.5}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, MaxSize)
	t0 := time.Now()
	for i := 0; i < 10000; i++ {
		if _, _, err := g.Next(buf, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	for grp, n := range g.SentGroup {
		if n != 1000 {
			t.Errorf("group %d got %d messages, want 1000 (uniform)", grp, n)
		}
	}
	es := float64(g.SentType[dis.TypeEntityState]) / 10000
	if es < 0.47 || es > 0.53 {
		t.Errorf("entity state share %.3f, want about 0.5", es)
	}
	// Fire only: each entity still sends an Entity State every 5 s.
	g, _ = NewGenerator(GenConfig{Plan: plan(1), Entities: 2, Mix: Mix{dis.TypeFire: 1}})
	var types []dis.PDUType
	for _, at := range []time.Duration{0, 0, time.Second, time.Second, 5 * time.Second, 5 * time.Second, 6 * time.Second} {
		if _, _, err := g.Next(buf, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
		types = append(types, dis.PDUType(buf[2+2]))
	}
	want := []dis.PDUType{1, 1, 2, 2, 1, 1, 2}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("types %v, want %v (heartbeat every 5 s)", types, want)
		}
	}
}

func TestProcessorDropsMalformed(t *testing.T) {
	g, _ := NewGenerator(GenConfig{Plan: plan(4), Entities: 1, Mix: Mix{dis.TypeEntityState: 1}})
	buf := make([]byte, MaxSize)
	now := time.Now()
	n, _, _ := g.Next(buf, now)
	good := append([]byte(nil), buf[:n]...)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name   string
		b      []byte
		joined int
		reason string
	}{
		{"empty", nil, 4, DropShort},
		{"address only", good[:2], 4, DropShort},
		{"header cut", good[:10], 4, DropShort},
		{"length beyond datagram", good[:100], 4, DropHeader},
		{"length below header", mut(func(b []byte) []byte { b[2+8], b[2+9] = 0, 4; return b }), 4, DropHeader},
		{"unknown type", mut(func(b []byte) []byte { b[2+2] = 200; return b }), 4, DropDecode},
		{"count beyond length", mut(func(b []byte) []byte { b[2+19] = 3; return b }), 4, DropDecode},
		{"junk after PDU", append(append([]byte(nil), good...), 0, 7), 4, DropPadding},
		{"group not joined", mut(func(b []byte) []byte { b[0], b[1] = 0, 64; return b }), 2, DropUnwanted},
	} {
		p := NewProcessor(plan(4), tc.joined)
		if p.Process(tc.b, now) || p.Stats.Dropped[tc.reason] != 1 || p.Stats.Packets != 1 {
			t.Errorf("%s: dropped %v, want one %q", tc.name, p.Stats.Dropped, tc.reason)
		}
	}
	// A relative timestamp is accepted but gives no delay sample.
	p := NewProcessor(plan(4), 4)
	rel := mut(func(b []byte) []byte { b[2+7] &^= 1; return b })
	if !p.Process(rel, now) || p.Stats.Dropped[DropUnstamped] != 1 || p.Stats.Delay.Count() != 0 {
		t.Errorf("relative timestamp: %+v", p.Stats)
	}
}

func FuzzProcess(f *testing.F) {
	g, _ := NewGenerator(GenConfig{Plan: plan(4), Entities: 1})
	buf := make([]byte, MaxSize)
	n, _, _ := g.Next(buf, time.Now())
	f.Add(buf[:n])
	f.Add([]byte{0, 1, 6, 1, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := NewProcessor(plan(4), 4)
		ok := p.Process(b, time.Now())
		var drops uint64
		for _, v := range p.Stats.Dropped {
			drops += v
		}
		if p.Stats.Packets != 1 || (ok && p.Stats.Messages != 1) || (!ok && drops != 1) {
			t.Fatalf("accounting: ok=%v %+v", ok, p.Stats)
		}
	})
}

func TestDelayAndEntityTimeout(t *testing.T) {
	g, _ := NewGenerator(GenConfig{Plan: plan(1), Entities: 2, Mix: Mix{dis.TypeEntityState: 1}})
	buf := make([]byte, MaxSize)
	t0 := time.Date(2026, 1, 1, 10, 59, 59, 999_000_000, time.UTC) // the hour turns in flight
	p := NewProcessor(plan(1), 1)
	for i := 0; i < 2; i++ {
		n, _, _ := g.Next(buf, t0)
		p.Process(buf[:n], t0.Add(3*time.Millisecond))
	}
	if d := p.Stats.Delay.Quantile(0.5); math.Abs(d-0.003) > 0.0003 {
		t.Errorf("delay across the hour %v, want 3ms", d)
	}
	if p.Entities() != 2 {
		t.Fatalf("entities %d", p.Entities())
	}
	p.Expire(t0.Add(11 * time.Second))
	if p.Entities() != 2 || p.Timeouts != 0 {
		t.Errorf("expired before 12 s")
	}
	p.Expire(t0.Add(12*time.Second + 3*time.Millisecond))
	if p.Entities() != 0 || p.Timeouts != 2 {
		t.Errorf("after 12 s: %d entities, %d timeouts", p.Entities(), p.Timeouts)
	}
}

// TestLoopbackSendReceive sends over real UDP sockets on 127.0.0.1.
func TestLoopbackSendReceive(t *testing.T) {
	r := &Receiver{Plan: plan(1), Joined: 1, Port: 0, Local: true}
	r.Port = freePort(t)
	if _, err := r.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	g, _ := NewGenerator(GenConfig{Plan: plan(1), Entities: 10, Size: 200})
	p, _ := measure.NewPacer(5000, measure.Constant, time.Now(), 1)
	s := &Sender{Gen: g, Pacer: p, Port: r.Port, Dest: netip.MustParseAddr("127.0.0.1")}
	sctx, scancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer scancel()
	if err := s.Run(sctx); err != nil {
		t.Fatal(err)
	}
	sent, _, _ := s.Snapshot()
	deadline := time.Now().Add(2 * time.Second)
	for r.Snapshot().Packets < sent && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	sum := r.Snapshot()
	if sent < 1500 || sum.Messages != sent || sum.Bytes != sent*200 || sum.Entities != 10 || sum.Delay.Count() != sent {
		t.Fatalf("sent %d, received %+v", sent, sum)
	}
	if d := sum.Delay.Quantile(0.5); !(d > 0 && d < 0.05) {
		t.Errorf("loopback delay p50 %v", d)
	}
}

func TestCollectorNames(t *testing.T) {
	g, _ := NewGenerator(GenConfig{Plan: plan(1), Entities: 1})
	c := &Collector{Sender: &Sender{Gen: g}, Receiver: &Receiver{Plan: plan(1), Joined: 1}, Work: &WorkLoop{}, Baseline: func() float64 { return 1 }}
	ch := make(chan prometheus.Metric, 100)
	if err := c.Update(ch); err != nil {
		t.Fatal(err)
	}
	close(ch)
	seen := map[string]bool{}
	for m := range ch {
		d := m.Desc().String()
		name := d[strings.Index(d, `fqName: "`)+9:]
		seen[name[:strings.Index(name, `"`)]] = true
	}
	for _, want := range []string{"protolab_messages_sent_total", "protolab_messages_received_total",
		"protolab_message_delay_seconds", "protolab_dis_dropped_total", "protolab_dis_work_loop_iterations_total"} {
		if !seen[want] {
			t.Errorf("metric %s missing (have %v)", want, seen)
		}
	}
}

func TestJoinedGroupsSpreadOverTime(t *testing.T) {
	for _, n := range []int{1, 2, 10, 1000, 10000} {
		s := Stride(n)
		if gcd(s, n) != 1 {
			t.Fatalf("stride %d not coprime with %d", s, n)
		}
		g, _ := NewGenerator(GenConfig{Plan: Plan{Groups: n, PerGroup: 65536 / n, Base: DefaultBase}, Entities: 1})
		buf := make([]byte, MaxSize)
		k := Joined(n, 0.1)
		// Of the first n/2 messages, about a tenth go to the joined groups 0..k-1.
		hits := 0
		for i := 0; i < n/2; i++ {
			if _, grp, _ := g.Next(buf, time.Now()); grp < k {
				hits++
			}
		}
		if n >= 1000 && (hits < n/2/10*8/10 || hits > n/2/10*12/10) {
			t.Errorf("%d groups: %d of the first %d messages went to the joined %d groups", n, hits, n/2, k)
		}
	}
}

// The test-only slowdown does extra work per accepted PDU and changes nothing
// the processor reports.
func TestExtraWorkIsWorkOnly(t *testing.T) {
	g, buf, now := esGenerator(t), make([]byte, MaxSize), time.Now()
	n, _, err := g.Next(buf, now)
	if err != nil {
		t.Fatal(err)
	}
	plain, slowed := NewProcessor(plan(2048), 2048), NewProcessor(plan(2048), 2048)
	slowed.extraWork = 50
	for i := 0; i < 3; i++ {
		if !plain.Process(buf[:n], now) || !slowed.Process(buf[:n], now) {
			t.Fatal("message dropped")
		}
	}
	if plain.Stats.Messages != slowed.Stats.Messages || plain.Stats.Bytes != slowed.Stats.Bytes {
		t.Errorf("stats differ: %+v vs %+v", plain.Stats, slowed.Stats)
	}
	if plain.sink != 0 || slowed.sink == 0 {
		t.Errorf("sink %d (plain) %d (slowed): the extra work did not run", plain.sink, slowed.sink)
	}
}

// Articulation parameters ride on every Entity State PDU in any syntax; the
// receiver counts each message's leaves (4 integers and an octet string per
// parameter) and ends the delay at delivery when it has a clock.
func TestArticulationsAndLeaves(t *testing.T) {
	leaves := map[int]syntax.Composition{}
	for _, k := range []int{0, 5} {
		g, err := NewGenerator(GenConfig{Plan: plan(1), Entities: 1, Mix: Mix{dis.TypeEntityState: 1}, Syntax: "ber", Articulations: k})
		if err != nil {
			t.Fatal(err)
		}
		p := NewProcessor(plan(1), 1)
		if err := p.SetSyntax("ber"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		p.clock = func() time.Time { return t0.Add(5 * time.Millisecond) }
		buf := make([]byte, MaxSize)
		for i := 0; i < 3; i++ {
			n, _, err := g.Next(buf, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Process(buf[:n], t0.Add(time.Millisecond)) {
				t.Fatalf("k=%d: dropped: %v", k, p.Stats.Dropped)
			}
		}
		if p.Stats.Decode.Count() != 3 {
			t.Errorf("k=%d: %d decodes timed, want 3", k, p.Stats.Decode.Count())
		}
		if d := p.Stats.Delay.Mean(); math.Abs(d-0.005) > 1e-4 {
			t.Errorf("k=%d: delay %v, want the delivery clock's 5 ms", k, d)
		}
		l := p.Stats.Leaves
		if l.Integers%3 != 0 || l.Reals%3 != 0 || l.OctetStrings%3 != 0 {
			t.Fatalf("k=%d: leaves %+v not three equal messages", k, l)
		}
		leaves[k] = syntax.Composition{Integers: l.Integers / 3, Reals: l.Reals / 3, OctetStrings: l.OctetStrings / 3}
	}
	if d := (syntax.Composition{Integers: leaves[5].Integers - leaves[0].Integers, Reals: leaves[5].Reals - leaves[0].Reals,
		OctetStrings: leaves[5].OctetStrings - leaves[0].OctetStrings}); d != (syntax.Composition{Integers: 20, OctetStrings: 5}) {
		t.Errorf("5 articulation parameters added %+v, want 20 integers and 5 octet strings", d)
	}
	if _, err := NewGenerator(GenConfig{Plan: plan(1), Entities: 1, Articulations: 256}); err == nil {
		t.Error("256 articulation parameters accepted")
	}
}

// NoHeartbeat keeps a one-type stream pure; a Clock times every encoding.
func TestNoHeartbeatAndEncodeTiming(t *testing.T) {
	for _, beat := range []bool{true, false} {
		g, err := NewGenerator(GenConfig{Plan: plan(1), Entities: 1, Mix: Mix{dis.TypeFire: 1}, NoHeartbeat: !beat})
		if err != nil {
			t.Fatal(err)
		}
		g.Clock = time.Now
		buf := make([]byte, MaxSize)
		t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		for i := 0; i < 4; i++ {
			if _, _, err := g.Next(buf, t0.Add(time.Duration(i)*3*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if es := g.SentType[dis.TypeEntityState]; (es > 0) != beat {
			t.Errorf("heartbeat %v: %d Entity State PDUs among 4 Fire PDUs 3 s apart", beat, es)
		}
		if g.Encode.Count() != 4 {
			t.Errorf("%d encodings timed, want 4", g.Encode.Count())
		}
	}
}
