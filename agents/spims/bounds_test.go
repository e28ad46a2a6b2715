package spims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"protolab/agents/transport"
)

// serveLive runs Serve over transport name on 127.0.0.1:0 with live until
// the test ends; it returns the transport and the address.
func serveLive(t *testing.T, name string, live *Live) (transport.Transport, string) {
	t.Helper()
	tr, err := transport.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Available(); err != nil {
		t.Skipf("%s: %v", name, err)
	}
	ln, err := tr.Listen("127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, MaxPayload(tr), live, t.Logf) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return tr, ln.Addr().String()
}

func dial(t *testing.T, tr transport.Transport, addr string) transport.Conn {
	t.Helper()
	c, err := tr.Dial(context.Background(), addr, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// ask sends m and returns the answer's header and message.
func ask(t *testing.T, c transport.Conn, m []byte) (header, []byte) {
	t.Helper()
	if err := c.WriteMsg(m); err != nil {
		t.Fatal(err)
	}
	a, err := c.ReadMsg(nil)
	if err != nil {
		t.Fatalf("answer to op 0x%02x: %v", m[0], err)
	}
	h, err := parseHeader(a)
	if err != nil {
		t.Fatal(err)
	}
	return h, a
}

// wantRefused checks that answer (h, m) refuses with a text holding want
// and, on a stream (udp has no close to see), that the responder then
// closes the connection.
func wantRefused(t *testing.T, c transport.Conn, h header, m []byte, want string) {
	t.Helper()
	err := refusal(h, m)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("answer op 0x%02x %q, want a refusal naming %q", h.op, m[Header:], want)
	}
	if c.RemoteAddr().Network() == "udp" {
		return
	}
	if m, err := c.ReadMsg(nil); !isEnd(err) {
		t.Fatalf("after the refusal: %d bytes, %v; want the connection closed", len(m), err)
	}
}

// The 13-byte message that asked for a 4 GiB response (the responder
// allocated and zeroed 4,294,984,000 bytes for it, 13.9 s) is refused
// before anything is allocated for its size.
func TestHugeRequestRefusedWithoutAllocating(t *testing.T) {
	live := &Live{}
	tr, addr := serveLive(t, "tcp", live)
	c := dial(t, tr, addr)
	// one exchange first: the connection's buffers exist on both sides
	if h, _ := ask(t, c, appendMsg(nil, header{op: opRequest, seq: 1, a: 100}, 0)); h.op != opResponse {
		t.Fatalf("op 0x%02x, want a response", h.op)
	}
	attack := appendMsg(nil, header{op: opRequest, seq: 2, a: 0xFFFFFFFF}, 0)
	if len(attack) != 13 {
		t.Fatalf("attack of %d bytes", len(attack))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h, m := ask(t, c, attack)
	runtime.ReadMemStats(&after)
	wantRefused(t, c, h, m, "response of 4294967295 payload bytes")
	// the refusal's cost: its error text and reply, a few KiB; the
	// smallest allowed response of this size class would be 16 MiB
	d := after.TotalAlloc - before.TotalAlloc
	if d > 64<<10 {
		t.Errorf("refusing allocated %d bytes, want < 64 KiB", d)
	}
	t.Logf("refusing the 13-byte request allocated %d bytes", d)
	if n := live.Refused(refusedTooLarge); n != 1 {
		t.Errorf("refused too_large %d, want 1", n)
	}
	if got := refusedMetrics(t, live); got != "bad_hello=0 too_large=1 too_many_units=0" {
		t.Errorf("protolab_spims_refused_messages_total: %s", got)
	}
}

// refusedMetrics is live's refused counters as /metrics has them.
func refusedMetrics(t *testing.T, live *Live) string {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	if err := live.Update(ch); err != nil {
		t.Fatal(err)
	}
	close(ch)
	var out []string
	for m := range ch {
		if !strings.Contains(m.Desc().String(), `"protolab_spims_refused_messages_total"`) {
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%g", pb.GetLabel()[0].GetValue(), pb.GetCounter().GetValue()))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// Each bound of proto.go, at and past its limit, over real transports.
func TestResponderBounds(t *testing.T) {
	udpMax := uint32(transport.UDPMaxMessage - Header)
	streamMax := uint32(transport.MaxFrame - Header)
	for _, tc := range []struct {
		name, transport string
		msg             []byte
		refused         string // "": served
		reason          string
	}{
		{"udp request at the bound", "udp", appendMsg(nil, header{op: opRequest, a: udpMax}, 0), "", ""},
		{"udp request past it", "udp", appendMsg(nil, header{op: opRequest, a: udpMax + 1}, 0), fmt.Sprintf("response of %d payload bytes, more than one message of this transport carries (%d)", udpMax+1, udpMax), refusedTooLarge},
		{"tcp request past it", "tcp", appendMsg(nil, header{op: opRequest, a: streamMax + 1}, 0), "response of 16777204 payload bytes", refusedTooLarge},
		{"tcp unit past it", "tcp", appendMsg(nil, header{op: opBulkStart, a: 1, b: streamMax + 1}, 0), "units of 16777204 payload bytes", refusedTooLarge},
		{"tcp 4 Gi units of 4 GiB", "tcp", appendMsg(nil, header{op: opBulkStart, a: 0xFFFFFFFF, b: 0xFFFFFFFF}, 0), "units of 4294967295 payload bytes", refusedTooLarge},
		{"long token", "tcp", append(appendMsg(nil, header{op: opExpHello}, 0), strings.Repeat("x", MaxTokenBytes+1)...), "token of 65 bytes, at most 64", refusedBadHello},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &Live{}
			tr, addr := serveLive(t, tc.transport, live)
			c := dial(t, tr, addr)
			h, m := ask(t, c, tc.msg)
			if tc.refused == "" {
				if h.op != opResponse || len(m) != Header+int(udpMax) {
					t.Fatalf("op 0x%02x, %d bytes; want a response of %d payload bytes", h.op, len(m)-Header, udpMax)
				}
				return
			}
			wantRefused(t, c, h, m, tc.refused)
			if n := live.Refused(tc.reason); n != 1 {
				t.Errorf("refused %s %d, want 1", tc.reason, n)
			}
		})
	}
}

// An expedited connection says hello once.
func TestSecondHelloRefused(t *testing.T) {
	live := &Live{}
	tr, addr := serveLive(t, "tcp", live)
	c := dial(t, tr, addr)
	hello := append(appendMsg(nil, header{op: opExpHello}, 0), newToken()...)
	if h, _ := ask(t, c, hello); h.op != opExpReady {
		t.Fatalf("op 0x%02x, want ready", h.op)
	}
	h, m := ask(t, c, hello)
	wantRefused(t, c, h, m, "a second expedited hello")
	if n := live.Refused(refusedBadHello); n != 1 {
		t.Errorf("refused bad_hello %d, want 1", n)
	}
}

// Stamped units: MaxStampedUnits are served and their hand-over times
// fit the stop answer; one more is refused.
func TestStampedUnitsBound(t *testing.T) {
	clock, err := bootID()
	if err != nil {
		t.Skipf("no boot_id here: %v", err)
	}
	live := &Live{}
	tr, addr := serveLive(t, "tcp", live)
	setup := func(c transport.Conn) {
		js, _ := json.Marshal(bulkSettings{Clock: clock})
		if err := bulkSetup(c, &bulkSettings{Clock: clock}, 10*time.Second); err != nil {
			t.Fatalf("settings %s: %v", js, err)
		}
	}
	c := dial(t, tr, addr)
	setup(c)
	h, m := ask(t, c, appendMsg(nil, header{op: opBulkStart, seq: 1, a: MaxStampedUnits + 1}, 0))
	wantRefused(t, c, h, m, "524289 units with delays")
	if n := live.Refused(refusedTooManyUnits); n != 1 {
		t.Errorf("refused too_many_units %d, want 1", n)
	}

	c = dial(t, tr, addr)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	setup(c)
	if err := c.WriteMsg(appendMsg(nil, header{op: opBulkStart, seq: 1, a: MaxStampedUnits}, 0)); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for u := 0; u < MaxStampedUnits; u++ {
		if buf, err = c.ReadMsg(buf); err != nil {
			t.Fatalf("unit %d: %v", u, err)
		}
	}
	if err := c.WriteMsg(appendMsg(nil, header{op: opBulkStop, seq: 1}, 0)); err != nil {
		t.Fatal(err)
	}
	ans, err := c.ReadMsg(nil)
	if err != nil {
		t.Fatalf("stop answer: %v", err)
	}
	var rep stopReport
	if err := json.Unmarshal(ans[Header+16:], &rep); err != nil || len(rep.HandedNs) != MaxStampedUnits {
		t.Fatalf("stop answer of %d bytes: %d times (%v), want %d", len(ans), len(rep.HandedNs), err, MaxStampedUnits)
	}
	t.Logf("stop answer with %d stamps: %d bytes of %d", MaxStampedUnits, len(ans), transport.MaxFrame)
}

// The bound holds for any stamp: 20 bytes each leave room in a frame.
func TestMaxStampedUnitsFitAFrame(t *testing.T) {
	js, err := json.Marshal(stopReport{HandedNs: []int64{1<<63 - 1}, Counters: map[string]uint64{"retransmits": 1<<64 - 1}})
	if err != nil {
		t.Fatal(err)
	}
	if n := Header + 17 + len(js) + MaxStampedUnits*stampBytes; n > transport.MaxFrame {
		t.Fatalf("a stop answer of %d stamps takes up to %d bytes, more than %d", MaxStampedUnits, n, transport.MaxFrame)
	}
	if n := len(`9223372036854775807,`); n != stampBytes {
		t.Fatalf("a stamp takes up to %d bytes, stampBytes says %d", n, stampBytes)
	}
}

// A job asks for no more units than the wire and the stop answer carry.
func TestJobCountBounds(t *testing.T) {
	for _, tc := range []struct {
		job  map[string]any
		want string
	}{
		{map[string]any{"count": 1 << 32}, "count 4294967296: at most 4294967295 units"},
		{map[string]any{"count": MaxStampedUnits + 1, "delays": true}, "count 524289 with delays: at most 524288 units"},
		{map[string]any{"count": MaxStampedUnits + 1, "expedited": map[string]any{"via": "urgent", "rate": 0.5}}, "count 524289 with delays"},
	} {
		tc.job["procedure"], tc.job["transport"], tc.job["target"] = ProcBulkGet, "tcp", "127.0.0.1:1"
		_, err := ParseJob([]byte(jobJSON(tc.job)))
		var bj *BadJob
		if !errors.As(err, &bj) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("job %v: %v, want a bad job naming %q", tc.job, err, tc.want)
		}
	}
	if _, err := ParseJob([]byte(jobJSON(map[string]any{"procedure": ProcBulkGet, "transport": "tcp", "target": "127.0.0.1:1", "count": MaxStampedUnits, "delays": true}))); err != nil {
		t.Errorf("count %d with delays: %v", MaxStampedUnits, err)
	}
}
