package spims

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"protolab/agents/transport"
)

// A bulk of 20 x 10240 B with an expedited message after every 3rd unit
// (rate .33), twice: byte-exact, every expedited message there once, delays
// positive, per-octet delay and the sender's counters reported.
func TestBulkGetWithExpeditedData(t *testing.T) {
	const count, size, iterations = 20, 10240, 2
	data := make([]byte, count*size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ transport, via, counter string }{
		{"tcp", ViaUrgent, "retransmitted_segments"},
		{"tcp", ViaConnection, "retransmitted_segments"},
		{"quic", ViaStream, "packets_lost"},
		{"quic", ViaConnection, "packets_lost"},
	} {
		t.Run(c.transport+"/"+c.via, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
			if err := os.WriteFile(src, data, 0o644); err != nil {
				t.Fatal(err)
			}
			addr := responder(t, c.transport, "127.0.0.1")
			res, took, err := timedJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": c.transport, "target": addr,
				"iterations": iterations, "count": count, "size": map[string]any{"dist": "constant", "value": size},
				"source_data": map[string]any{"access": "file", "path": src}, "destination_data": map[string]any{"access": "file", "path": dst},
				"expedited": map[string]any{"via": c.via, "rate": 0.33}, "sender_counters": true}))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if want := bytes.Repeat(data, iterations); !bytes.Equal(got, want) {
				t.Fatalf("destination: %d bytes, not the %d sent", len(got), len(want))
			}
			e := res.Bulk.Expedited
			want := iterations * (count / 3)
			if e == nil || e.Every != 3 || e.Expected != want || e.Received != want || e.DelaySeconds.Count != want {
				t.Fatalf("expedited %+v, want %d every 3 units", e, want)
			}
			if !(e.DelaySeconds.Min > 0) || e.DelaySeconds.Max < e.DelaySeconds.Min {
				t.Errorf("expedited delays %+v", e.DelaySeconds)
			}
			if d := res.Bulk.UnitDelaySeconds; d == nil || d.Count != iterations*count || !plausible(d, took) {
				t.Errorf("unit delays %+v", d)
			}
			if po, d := res.Bulk.PerOctetDelaySeconds, res.Bulk.UnitDelaySeconds; po == nil || d == nil || float64(*po) != float64(d.Mean)/size {
				t.Errorf("per-octet delay %v", po)
			}
			if _, ok := res.Bulk.SenderCounters[c.counter]; !ok {
				t.Errorf("sender counters %v: no %s", res.Bulk.SenderCounters, c.counter)
			}
		})
	}
}

// Delays alone: every unit stamped, no expedited channel.
func TestBulkGetDelays(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	res, took, err := timedJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": addr,
		"iterations": 1, "count": 50, "size": map[string]any{"dist": "constant", "value": 1000}, "delays": true}))
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Bulk.UnitDelaySeconds; d == nil || d.Count != 50 || !plausible(d, took) || res.Bulk.Expedited != nil {
		t.Fatalf("unit delays %+v, expedited %+v", d, res.Bulk.Expedited)
	}
}

// plausible unit delays: both ends of every delay, the responder's
// hand-over (the return of its write) and the initiator's read, are taken on
// one monotonic clock while the job runs, so no delay is further from zero
// than the job's own duration, measured around it. That is what a wrong clock
// or unit breaks. Their size is a figure, not a property to test on a shared
// machine: over loopback the kernel delivers a unit inside the write, so a
// responder descheduled before its write returns stamps the hand-over after
// the read (measured with two busy loops on a 2-core VM: a TCP unit at
// -4.9 ms), and queueing inside a transfer is real (QUIC's mean 0.3-1.7 ms
// with nothing else running, 3.3 ms loaded; TCP's up to 2.6 ms loaded).
func plausible(d *Stats, job time.Duration) bool {
	s := job.Seconds()
	lo, hi := float64(d.Min), float64(d.Max)
	return lo >= -s && hi <= s && d.Min <= d.Mean && d.Mean <= d.Max
}

// timedJob is runJob and how long it took.
func timedJob(t *testing.T, js string) (*Result, time.Duration, error) {
	t.Helper()
	t0 := time.Now()
	res, err := runJob(t, js)
	return res, time.Since(t0), err
}

func TestExpeditedJobRefusals(t *testing.T) {
	base := map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": "127.0.0.1:9"}
	for _, c := range []struct {
		change map[string]any
		want   string
	}{
		{map[string]any{"transport": "quic", "expedited": map[string]any{"via": "urgent", "rate": 0.33}}, "plain TCP's (transports with it: tcp)"},
		{map[string]any{"transport": "mptcp", "expedited": map[string]any{"via": "urgent", "rate": 0.33}}, "urgent over mptcp"},
		{map[string]any{"expedited": map[string]any{"via": "stream", "rate": 0.33}}, "multistream transport (quic)"},
		{map[string]any{"expedited": map[string]any{"via": "carrier pigeon", "rate": 0.33}}, "urgent, connection or stream"},
		{map[string]any{"expedited": map[string]any{"rate": 0.33}}, "via missing"},
		{map[string]any{"expedited": map[string]any{"via": "urgent", "rate": 0}}, "more than 0 and at most 1"},
		{map[string]any{"expedited": map[string]any{"via": "urgent", "rate": 0.33, "size": 5000}}, "size 5000"},
		{map[string]any{"procedure": "request_response", "delays": true}, "for bulk_get"},
	} {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range c.change {
			m[k] = v
		}
		js := jobJSON(m)
		_, err := ParseJob([]byte(js))
		var bj *BadJob
		if err == nil || !strings.Contains(err.Error(), c.want) || !asBadJob(err, &bj) {
			t.Errorf("%s: %v, want a bad job saying %q", js, err, c.want)
		}
	}
}

func asBadJob(err error, bj **BadJob) bool {
	b, ok := err.(*BadJob)
	*bj = b
	return ok
}

// A responder on another kernel would stamp with another clock: refused.
func TestDelaysNeedOneClock(t *testing.T) {
	cn := &served{dscp: -1, src: &memSource{}, reg: &expRegistry{}}
	err := cn.apply([]byte(`{"clock": "not-this-kernel"}`))
	if err == nil || !strings.Contains(err.Error(), "need one clock") {
		t.Fatalf("apply: %v, want a refusal", err)
	}
	id, err := bootID()
	if err != nil {
		t.Skip(err)
	}
	if err := cn.apply([]byte(`{"clock": "` + id + `"}`)); err != nil || !cn.stamp {
		t.Fatalf("this kernel's boot_id: %v (stamp %v)", err, cn.stamp)
	}
	err = cn.apply([]byte(`{"expedited": {"via": "urgent", "every": 3, "size": 16}}`))
	if err == nil || !strings.Contains(err.Error(), "without clock") {
		t.Fatalf("expedited without clock: %v", err)
	}
}

func TestExpeditedEveryAsTP4(t *testing.T) {
	tr, _ := transport.Get("tcp")
	for rate, every := range map[float64]int{0.33: 3, 0.14: 7, 0.08: 12, 0.0588: 17, 0.0455: 22, 0.037: 27, 0.03: 33} {
		cfg, err := ExpeditedSpec{Via: ViaUrgent, Rate: rate}.resolve(tr)
		if err != nil || cfg.Every != every || cfg.Size != DefaultExpeditedSize {
			t.Errorf("rate %g: %+v, %v; want every %d", rate, cfg, err, every)
		}
	}
}
