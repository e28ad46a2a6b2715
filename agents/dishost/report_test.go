package dishost

import (
	"bytes"
	"encoding/json"
	"math"
	"protolab/agents/syntax"
	"strings"
	"testing"
	"time"

	"protolab/agents/dis"
)

func TestSendReport(t *testing.T) {
	g, err := NewGenerator(GenConfig{Plan: plan(3), Entities: 2, Mix: Mix{dis.TypeEntityState: 1}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, MaxSize)
	now := time.Unix(1000, 0)
	for i := 0; i < 6; i++ {
		if _, _, err := g.Next(buf, now); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := WriteReport(&out, SendReport(plan(3), 0, g, 6, 876, 1, 2)); err != nil {
		t.Fatal(err)
	}
	want := `{"elapsed_seconds":2,"groups":3,"heartbeats":0,"packets_per_second":3,"per_group":32,"role":"send",` +
		`"send_errors":1,"sent_by_group":[2,2,2],"sent_by_type":{"Entity State":6},"sent_bytes":876,"sent_packets":6,"size_bytes":0,"syntax":"raw"}` + "\n"
	if out.String() != want {
		t.Errorf("send report\n got %s\nwant %s", out.String(), want)
	}
}

// samplesEvery returns n+1 samples 100 ms apart from t0, with the counters
// growing linearly: iters per sample, loop and cgroup CPU per sample.
func samplesEvery(t0 time.Time, n int, iters uint64, loop, cgroup time.Duration) []CPUSample {
	var out []CPUSample
	for i := 0; i <= n; i++ {
		out = append(out, CPUSample{T: t0.Add(time.Duration(i) * 100 * time.Millisecond),
			Iters: uint64(i) * iters, Loop: time.Duration(i) * loop, Cgroup: time.Duration(i) * cgroup})
	}
	return out
}

func TestCPUWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := samplesEvery(t0, 10, 0, 0, 0) // 0 .. 1 s
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name        string
		first, last time.Time
		wantA       time.Time
		wantB       time.Time
	}{
		{"no datagram: whole period", time.Time{}, time.Time{}, ms(0), ms(1000)},
		{"samples inside first..last", ms(250), ms(750), ms(300), ms(700)},
		{"bounds included", ms(300), ms(700), ms(300), ms(700)},
		{"one sample inside: whole period", ms(450), ms(550), ms(0), ms(1000)},
		{"datagrams after the last sample: whole period", ms(2000), ms(3000), ms(0), ms(1000)},
	}
	for _, tt := range tests {
		a, b := CPUWindow(s, tt.first, tt.last)
		if !a.T.Equal(tt.wantA) || !b.T.Equal(tt.wantB) {
			t.Errorf("%s: window %v..%v, want %v..%v", tt.name, a.T.Sub(t0), b.T.Sub(t0), tt.wantA.Sub(t0), tt.wantB.Sub(t0))
		}
	}
}

func TestIdleCPURatio(t *testing.T) {
	s := time.Second
	tests := []struct {
		name           string
		c0, c1, l0, l1 time.Duration
		seconds        float64
		want           float64 // NaN: unknown
	}{
		{"cgroup besides the loop", 1 * s, 4 * s, 0, 2 * s, 2, 0.5},
		{"loop used it all", 1 * s, 3 * s, 0, 2 * s, 2, 0},
		{"never negative", 1 * s, 2 * s, 0, 2 * s, 2, 0},
		{"cgroup unreadable", -1, 3 * s, 0, 1 * s, 2, math.NaN()},
		{"no time", 1 * s, 3 * s, 0, 1 * s, 0, math.NaN()},
		{"NaN time", 1 * s, 3 * s, 0, 1 * s, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		got := IdleCPURatio(tt.c0, tt.c1, tt.l0, tt.l1, tt.seconds)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRecvReport(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var delay Summary
	delay.Dropped = map[string]uint64{DropUnwanted: 2}
	delay.Packets, delay.Messages, delay.Bytes, delay.Entities = 101, 100, 14600, 7
	delay.First, delay.Last = ms(250), ms(750)
	for i := 0; i < 100; i++ {
		delay.Delay.Add(1e-3 + 1e-4*float64(1-2*(i%2))) // 0.9 and 1.1 ms: mean 1 ms, sd 0.1 ms x sqrt(100/99)
	}
	delay.Leaves = syntax.Composition{Integers: 4200, Reals: 900, OctetStrings: 600}
	sd := 1e-4 * math.Sqrt(100.0/99)
	base := map[string]float64{"groups": 4, "joined_groups": 2, "sockets": 1, "elapsed_seconds": 1.2}
	with := func(m map[string]float64, kv ...any) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(float64)
		}
		return out
	}
	tests := []struct {
		name string
		run  RecvRun
		want map[string]float64 // numeric fields; every other numeric field must be absent
	}{
		{
			name: "nothing received, cgroup read: whole period",
			run: RecvRun{Summary: Summary{Stats: Stats{Dropped: map[string]uint64{}}},
				Samples: samplesEvery(t0, 10, 0, 0, 50*time.Millisecond), CgroupOK: true},
			want: with(base, "packets", 0.0, "messages", 0.0, "bytes", 0.0, "entities", 0.0, "entity_timeouts", 0.0,
				"delay_samples", 0.0, "cpu_window_seconds", 1.0, "cgroup_cpu_seconds", 0.5, "cpu_cgroup_ratio", 0.5),
		},
		{
			name: "received with the work loop, cgroup unreadable",
			run: RecvRun{Summary: delay, Samples: samplesEvery(t0, 10, 1000, 40*time.Millisecond, 0),
				Work: &WorkRates{Baseline: 20000, After: 19800, Idle: math.NaN()}},
			want: with(base, "packets", 101.0, "messages", 100.0, "bytes", 14600.0, "entities", 7.0, "entity_timeouts", 0.0,
				"delay_samples", 100.0, "active_seconds", 0.5, "packets_per_second", 200.0, "messages_per_second", 100*100.0/101/0.5,
				"delay_p50_seconds", delay.Delay.Quantile(0.5), "delay_p99_seconds", delay.Delay.Quantile(0.99), "delay_mean_seconds", 1e-3,
				"delay_sd_seconds", sd, "delay_ci99_seconds", 2.5758293035489*sd/10, "pdu_integers", 42.0, "pdu_reals", 9.0,
				"pdu_octet_strings", 6.0, "arrival_first_unix", 1000.25, "arrival_last_unix", 1000.75,
				"cpu_window_seconds", 0.4, "work_baseline_per_second", 20000.0, "work_baseline_after_per_second", 19800.0,
				"work_during_per_second", 10000.0, "cpu_busyloop_ratio", 0.5, "cpu_busyloop_noise_ratio", 0.01,
				"work_thread_cpu_seconds", 0.16),
		},
		{
			name: "work loop and cgroup: ratio without the loop's thread, idle ratio reported",
			run: RecvRun{Summary: delay, Samples: samplesEvery(t0, 10, 1000, 40*time.Millisecond, 50*time.Millisecond),
				CgroupOK: true, Work: &WorkRates{Baseline: 10000, After: 10000, Idle: 0.02},
				Start: ms(-100), End: ms(1500), Drops: &KernelDrops{RcvbufErrors: 3, InErrors: 4, ReasmReqds: 10, ReasmOKs: 2, ReasmFails: 6, ReasmTimeout: 1}},
			want: with(base, "packets", 101.0, "messages", 100.0, "bytes", 14600.0, "entities", 7.0, "entity_timeouts", 0.0,
				"delay_samples", 100.0, "active_seconds", 0.5, "packets_per_second", 200.0, "messages_per_second", 100*100.0/101/0.5,
				"delay_p50_seconds", delay.Delay.Quantile(0.5), "delay_p99_seconds", delay.Delay.Quantile(0.99), "delay_mean_seconds", 1e-3,
				"delay_sd_seconds", sd, "delay_ci99_seconds", 2.5758293035489*sd/10, "pdu_integers", 42.0, "pdu_reals", 9.0,
				"pdu_octet_strings", 6.0, "arrival_first_unix", 1000.25, "arrival_last_unix", 1000.75,
				"listen_start_unix", 999.9, "listen_end_unix", 1001.5, "kernel_udp_rcvbuf_errors", 3.0, "kernel_udp_in_errors", 4.0,
				"kernel_ip_reasm_reqds", 10.0, "kernel_ip_reasm_oks", 2.0, "kernel_ip_reasm_fails", 6.0, "kernel_ip_reasm_timeouts", 1.0,
				"cpu_window_seconds", 0.4, "work_baseline_per_second", 10000.0, "work_baseline_after_per_second", 10000.0,
				"work_during_per_second", 10000.0, "cpu_busyloop_ratio", 0.0, "cpu_busyloop_noise_ratio", 0.0,
				"work_thread_cpu_seconds", 0.16, "cpu_cgroup_idle_ratio", 0.02, "cgroup_cpu_seconds", 0.2, "cpu_cgroup_ratio", 0.1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run.Plan, tt.run.Joined, tt.run.Sockets, tt.run.Elapsed = plan(4), 2, 1, 1.2
			var buf bytes.Buffer
			if err := WriteReport(&buf, RecvReport(tt.run)); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
				t.Errorf("not one JSON line: %q", buf.String())
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got["role"] != "recv" {
				t.Errorf("role %v", got["role"])
			}
			for k, v := range got {
				f, ok := v.(float64)
				if !ok {
					continue
				}
				w, ok := tt.want[k]
				if !ok {
					t.Errorf("unexpected %s = %v", k, f)
				} else if math.Abs(f-w) > 1e-9*math.Max(1, math.Abs(w)) {
					t.Errorf("%s = %v, want %v", k, f, w)
				}
			}
			for k := range tt.want {
				if _, ok := got[k]; !ok {
					t.Errorf("%s missing", k)
				}
			}
		})
	}
}

func TestWriteReport(t *testing.T) {
	var buf bytes.Buffer
	err := WriteReport(&buf, map[string]any{"b": 1.5, "a": math.NaN(), "c": uint64(3), "d": math.Inf(-1), "e": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":null,"b":1.5,"c":3,"d":null,"e":"x"}` + "\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	buf.Reset()
	if err := WriteReport(&buf, map[string]any{"f": func() {}}); err == nil || buf.Len() != 0 {
		t.Errorf("unencodable value: error %v, wrote %q", err, buf.String())
	}
}

func TestKernelDropsFromThisNamespace(t *testing.T) {
	d, err := ReadKernelDrops()
	if err != nil {
		t.Skipf("no /proc/net/snmp here: %v", err)
	}
	if d.RcvbufErrors < 0 || d.InErrors < d.RcvbufErrors {
		t.Errorf("counters %+v: InErrors counts every receive error, RcvbufErrors among them", d)
	}
	if d.ReasmReqds < d.ReasmOKs || d.ReasmFails < d.ReasmTimeout {
		t.Errorf("counters %+v: a reassembled datagram took fragments; an expired queue is a failure", d)
	}
	a := KernelDrops{RcvbufErrors: 5, InErrors: 9, ReasmReqds: 20, ReasmOKs: 8, ReasmFails: 4, ReasmTimeout: 2}
	b := KernelDrops{RcvbufErrors: 2, InErrors: 3, ReasmReqds: 10, ReasmOKs: 5, ReasmFails: 1, ReasmTimeout: 1}
	if got := a.Minus(b); got != (KernelDrops{3, 6, 10, 3, 3, 1}) {
		t.Errorf("Minus: %+v", got)
	}
}
