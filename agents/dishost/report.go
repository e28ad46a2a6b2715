package dishost

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/prometheus/procfs"
)

// SendReport is the summary of a send: what the sender counted (packets,
// bytes, errors) over elapsed seconds, and what its generator made.
func SendReport(plan Plan, size int, gen *Generator, packets, bytes, errs uint64, elapsed float64) map[string]any {
	byType := map[string]uint64{}
	for t, n := range gen.SentType {
		byType[t.String()] = n
	}
	out := map[string]any{
		"role": "send", "sent_packets": packets, "sent_bytes": bytes, "send_errors": errs, "elapsed_seconds": elapsed,
		"packets_per_second": float64(packets) / elapsed, "sent_by_group": gen.SentGroup, "sent_by_type": byType,
		"heartbeats": gen.Heartbeat, "groups": plan.Groups, "per_group": plan.PerGroup, "size_bytes": size,
		"syntax": gen.Syntax(),
	}
	if gen.Encode.Count() > 0 { // timed (the generator had a clock)
		out["encode_samples"] = gen.Encode.Count()
		out["encode_mean_seconds"] = gen.Encode.Mean()
		out["encode_p99_seconds"] = gen.Encode.Quantile(0.99)
	}
	return out
}

// CPUSample is one reading of the CPU counters while receiving.
type CPUSample struct {
	T      time.Time
	Iters  uint64        // work loop chunks done
	Loop   time.Duration // CPU time of the work loop's thread
	Cgroup time.Duration // CPU time of the container's cgroup
}

// WorkRates are the work loop's rates with no traffic, iterations/s.
type WorkRates struct {
	Baseline float64 // before joining (the calibration)
	After    float64 // after receiving
	Idle     float64 // container CPU besides the loop during the calibration, from IdleCPURatio (NaN: unknown)
}

// RecvRun is what one receive measured, for RecvReport.
type RecvRun struct {
	Plan     Plan
	Joined   int // groups joined
	Sockets  int // sockets the joins took
	Elapsed  float64
	Summary  Summary
	Samples  []CPUSample // in time order, at least one
	CgroupOK bool        // the cgroup CPU counter could be read
	Work     *WorkRates  // nil without the work loop
	Syntax   string      // transfer syntax ("" reads as raw)
	Start    time.Time   // the receive window: from the joins done (the ready file) ...
	End      time.Time   // ... to the end of listening
	// What the kernel dropped in this network namespace during the window before any socket read it: UDP
	// datagrams (full receive buffers: RcvbufErrors; all receive errors: InErrors), and IP reassembly's
	// counters (a datagram larger than the MTU arrives in fragments); nil when unreadable.
	Drops *KernelDrops
}

// KernelDrops are receive counters of /proc/net/snmp (this process's network namespace): Udp RcvbufErrors
// and InErrors, and Ip ReasmReqds (fragments that needed reassembly), ReasmOKs (datagrams reassembled),
// ReasmFails (failures: a fragment refused for want of reassembly memory, or a queue that expired) and
// ReasmTimeout (queues that expired incomplete).
type KernelDrops struct {
	RcvbufErrors, InErrors                         float64
	ReasmReqds, ReasmOKs, ReasmFails, ReasmTimeout float64
}

// ReadKernelDrops reads them through procfs.
func ReadKernelDrops() (*KernelDrops, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	self, err := fs.Self()
	if err != nil {
		return nil, err
	}
	snmp, err := self.Snmp()
	if err != nil {
		return nil, err
	}
	u, ip := snmp.Udp, snmp.Ip
	for name, v := range map[string]*float64{"Udp RcvbufErrors": u.RcvbufErrors, "Udp InErrors": u.InErrors,
		"Ip ReasmReqds": ip.ReasmReqds, "Ip ReasmOKs": ip.ReasmOKs, "Ip ReasmFails": ip.ReasmFails,
		"Ip ReasmTimeout": ip.ReasmTimeout} {
		if v == nil {
			return nil, fmt.Errorf("no %s in /proc/net/snmp", name)
		}
	}
	return &KernelDrops{RcvbufErrors: *u.RcvbufErrors, InErrors: *u.InErrors, ReasmReqds: *ip.ReasmReqds,
		ReasmOKs: *ip.ReasmOKs, ReasmFails: *ip.ReasmFails, ReasmTimeout: *ip.ReasmTimeout}, nil
}

// Minus is the counters' growth since before.
func (d KernelDrops) Minus(before KernelDrops) KernelDrops {
	return KernelDrops{RcvbufErrors: d.RcvbufErrors - before.RcvbufErrors, InErrors: d.InErrors - before.InErrors,
		ReasmReqds: d.ReasmReqds - before.ReasmReqds, ReasmOKs: d.ReasmOKs - before.ReasmOKs,
		ReasmFails: d.ReasmFails - before.ReasmFails, ReasmTimeout: d.ReasmTimeout - before.ReasmTimeout}
}

// unixSeconds is t as seconds since the epoch (the hosts of a lab share one clock).
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// AddSpan puts the first and last datagram's times into a report as <role>_first_unix and _last_unix.
func AddSpan(out map[string]any, role string, first, last time.Time) {
	if !first.IsZero() {
		out[role+"_first_unix"], out[role+"_last_unix"] = unixSeconds(first), unixSeconds(last)
	}
}

// RecvReport is the summary of a receive: counts, rates over the time
// datagrams arrived, delay quantiles and the CPU figures of the window
// CPUWindow picks.
func RecvReport(r RecvRun) map[string]any {
	sum := r.Summary
	out := map[string]any{
		"role": "recv", "groups": r.Plan.Groups, "joined_groups": r.Joined, "sockets": r.Sockets,
		"elapsed_seconds": r.Elapsed, "packets": sum.Packets, "messages": sum.Messages, "bytes": sum.Bytes,
		"dropped": sum.Dropped, "entities": sum.Entities, "entity_timeouts": sum.Timeouts,
		"delay_samples": sum.Delay.Count(), "syntax": r.Syntax,
	}
	if r.Syntax == "" {
		out["syntax"] = "raw"
	}
	if r.Syntax == "skinny" {
		out["skinny_matched"], out["skinny_fallback"] = sum.Skinny.Matched, sum.Skinny.Fallback
		if n := sum.Skinny.Matched + sum.Skinny.Fallback; n > 0 {
			out["skinny_match_ratio"] = float64(sum.Skinny.Matched) / float64(n)
		}
	}
	if active := sum.Last.Sub(sum.First).Seconds(); sum.Packets > 1 && active > 0 {
		out["active_seconds"] = active
		out["packets_per_second"] = float64(sum.Packets-1) / active
		out["messages_per_second"] = float64(sum.Messages) * float64(sum.Packets-1) / float64(sum.Packets) / active
	}
	if !r.Start.IsZero() {
		out["listen_start_unix"], out["listen_end_unix"] = unixSeconds(r.Start), unixSeconds(r.End)
	}
	AddSpan(out, "arrival", sum.First, sum.Last)
	if d := r.Drops; d != nil {
		out["kernel_udp_rcvbuf_errors"], out["kernel_udp_in_errors"] = d.RcvbufErrors, d.InErrors
		out["kernel_ip_reasm_reqds"], out["kernel_ip_reasm_oks"] = d.ReasmReqds, d.ReasmOKs
		out["kernel_ip_reasm_fails"], out["kernel_ip_reasm_timeouts"] = d.ReasmFails, d.ReasmTimeout
	}
	if sum.Delay.Count() > 0 {
		out["delay_p50_seconds"] = sum.Delay.Quantile(0.5)
		out["delay_p99_seconds"] = sum.Delay.Quantile(0.99)
		out["delay_mean_seconds"] = sum.Delay.Mean()
		if sum.Delay.Count() > 1 {
			out["delay_sd_seconds"] = sum.Delay.Std()
			out["delay_ci99_seconds"] = sum.Delay.CI99()
		}
	}
	if sum.Decode.Count() > 0 {
		out["decode_mean_seconds"] = sum.Decode.Mean()
		out["decode_p99_seconds"] = sum.Decode.Quantile(0.99)
	}
	if n := float64(sum.Messages); n > 0 { // mean composition of a message (the DIS v6 ASN.1 module's leaves)
		out["pdu_integers"] = float64(sum.Leaves.Integers) / n
		out["pdu_reals"] = float64(sum.Leaves.Reals) / n
		out["pdu_octet_strings"] = float64(sum.Leaves.OctetStrings) / n
	}
	a, b := CPUWindow(r.Samples, sum.First, sum.Last)
	win := b.T.Sub(a.T).Seconds()
	out["cpu_window_seconds"] = win
	if w := r.Work; w != nil {
		// How far the two idle rates differ is the method's noise floor;
		// the lost share is signed: below the floor it is noise.
		during := float64(b.Iters-a.Iters) / win
		out["work_baseline_per_second"] = w.Baseline
		out["work_baseline_after_per_second"] = w.After
		out["work_during_per_second"] = during
		out["cpu_busyloop_ratio"] = 1 - during/w.Baseline
		out["cpu_busyloop_noise_ratio"] = math.Abs(1 - w.After/w.Baseline)
		out["work_thread_cpu_seconds"] = (b.Loop - a.Loop).Seconds()
		if !math.IsNaN(w.Idle) {
			out["cpu_cgroup_idle_ratio"] = w.Idle
		}
	}
	if r.CgroupOK && win > 0 {
		out["cgroup_cpu_seconds"] = (b.Cgroup - a.Cgroup).Seconds()
		// The container's CPU without the work loop's own thread: what receiving cost.
		out["cpu_cgroup_ratio"] = math.Max(0, (b.Cgroup-a.Cgroup-(b.Loop-a.Loop)).Seconds()/win)
	}
	return out
}

// CPUWindow picks the samples the CPU figures span: the first and last
// inside first..last datagram when there are at least two, else the first
// and last of all (the whole receive period).
func CPUWindow(samples []CPUSample, first, last time.Time) (a, b CPUSample) {
	a, b = samples[0], samples[len(samples)-1]
	var in []CPUSample
	for _, s := range samples {
		if !first.IsZero() && !s.T.Before(first) && !s.T.After(last) {
			in = append(in, s)
		}
	}
	if len(in) >= 2 {
		a, b = in[0], in[len(in)-1]
	}
	return a, b
}

// IdleCPURatio is the container's CPU besides the work loop per second of
// a calibration lasting seconds, from cgroup CPU c0..c1 and loop CPU
// l0..l1, at least 0; NaN when c0 < 0 (cgroup unreadable) or seconds <= 0.
func IdleCPURatio(c0, c1, l0, l1 time.Duration, seconds float64) float64 {
	if c0 < 0 || !(seconds > 0) {
		return math.NaN()
	}
	return math.Max(0, (c1-c0-(l1-l0)).Seconds()/seconds)
}

// WriteReport writes v as one JSON line, NaN and infinities as null.
func WriteReport(w io.Writer, v map[string]any) error {
	for k, x := range v {
		if f, ok := x.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v[k] = nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(b))
	return nil
}
