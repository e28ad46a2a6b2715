// Package linkembench holds the results of `protolab-linkem bench` and the
// arithmetic that makes them: latency percentiles, the emulator's internal
// delay from its histogram, throughput and CPU figures, and the text report.
package linkembench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Result is what `bench --json` prints.
type Result struct {
	LinkemCPU  int               `json:"linkem_cpu"`
	LoadCPU    int               `json:"load_cpu"`
	Pinned     bool              `json:"pinned"`
	BusyPollUS float64           `json:"busy_poll_us"` // linkem's --busy-poll (0: off)
	Latency    map[string]LatRes `json:"latency"`      // "without", "with"
	AddedP50us float64           `json:"added_p50_us"`
	AddedP99us float64           `json:"added_p99_us"`
	// InternalP50us and InternalP99us estimate, from linkem's
	// protolab_linkem_added_delay_seconds histogram, the time from reading
	// a packet to its verdict during the latency run with linkem.
	InternalP50us float64   `json:"internal_p50_us"`
	InternalP99us float64   `json:"internal_p99_us"`
	Throughput    []TputRes `json:"throughput"`
}

// LatRes is a paced one-way latency run.
type LatRes struct {
	RatePPS int     `json:"rate_pps"`
	Sent    int     `json:"sent"`
	Lost    int     `json:"lost"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
	Maxus   float64 `json:"max_us"`
}

// TputRes is a saturating throughput run at one payload size.
type TputRes struct {
	Payload        int     `json:"payload_bytes"`
	WithoutPPS     float64 `json:"without_linkem_pps"`
	WithPPS        float64 `json:"with_linkem_pps"`
	OfferedPPS     float64 `json:"offered_pps_with_linkem"`
	KernelQFull    float64 `json:"kernel_queue_full_drops"`
	KernelSockFull float64 `json:"kernel_socket_full_drops"`
	// LinkemCPU is the share of one CPU linkem used during the run,
	// LinkemSysShare the part of that spent in the kernel, CPUPerPacketUS
	// linkem's CPU time per forwarded packet (1e6/CPUPerPacketUS is what
	// it would forward with a whole CPU to itself).
	LinkemCPU      float64 `json:"linkem_cpu_share"`
	LinkemSysShare float64 `json:"linkem_kernel_share"`
	CPUPerPacketUS float64 `json:"linkem_cpu_us_per_packet"`
}

// NewLatRes summarises a latency run of sent packets at ratePPS whose
// received packets took lat nanoseconds each (sorted in place).
func NewLatRes(ratePPS, sent int, lat []int64) LatRes {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r := LatRes{RatePPS: ratePPS, Sent: sent, Lost: sent - len(lat)}
	if len(lat) > 0 {
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e3 }
		r.P50us, r.P99us, r.Maxus = q(0.5), q(0.99), float64(lat[len(lat)-1])/1e3
	}
	return r
}

// SetAdded sets the delay linkem added: the "with" run's percentiles minus
// the "without" run's.
func (r *Result) SetAdded() {
	r.AddedP50us = r.Latency["with"].P50us - r.Latency["without"].P50us
	r.AddedP99us = r.Latency["with"].P99us - r.Latency["without"].P99us
}

// ChildReading is linkem's CPU time and kernel drop counters at one moment.
type ChildReading struct {
	User, Sys             time.Duration
	QueueFull, SocketFull float64
}

// NewTputRes assembles a throughput run at a payload size from its rates
// (packets/s) and linkem's readings before and after a run of total
// (warm-up included).
func NewTputRes(payload int, withoutPPS, withPPS, offeredPPS float64, before, after ChildReading, total time.Duration) TputRes {
	cpu := (after.User - before.User + after.Sys - before.Sys).Seconds()
	return TputRes{Payload: payload, WithoutPPS: withoutPPS, WithPPS: withPPS,
		OfferedPPS: offeredPPS, KernelQFull: after.QueueFull - before.QueueFull, KernelSockFull: after.SocketFull - before.SocketFull,
		LinkemCPU: cpu / total.Seconds(), LinkemSysShare: (after.Sys - before.Sys).Seconds() / math.Max(cpu, 1e-9),
		CPUPerPacketUS: 1e6 * cpu / math.Max(withPPS*total.Seconds(), 1)}
}

// AddedDelayUS estimates the p50 and p99 of the
// protolab_linkem_added_delay_seconds histogram in a text exposition, in
// microseconds, by linear interpolation within buckets (NaN when empty).
func AddedDelayUS(exposition io.Reader) (p50, p99 float64) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	sc := bufio.NewScanner(exposition)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "protolab_linkem_added_delay_seconds_bucket{") {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, err1 := strconv.ParseFloat(line[i+4:i+4+j], 64)
		f := strings.Fields(line)
		n, err2 := strconv.ParseFloat(f[len(f)-1], 64)
		if err1 == nil && err2 == nil {
			bs = append(bs, bucket{le, n})
		}
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN(), math.NaN()
	}
	total := bs[len(bs)-1].n
	q := func(p float64) float64 {
		target := p * total
		prevLe, prevN := 0.0, 0.0
		for _, b := range bs {
			if b.n >= target {
				if math.IsInf(b.le, 1) {
					return prevLe * 1e6
				}
				return 1e6 * (prevLe + (b.le-prevLe)*(target-prevN)/math.Max(b.n-prevN, 1))
			}
			prevLe, prevN = b.le, b.n
		}
		return prevLe * 1e6
	}
	return q(0.5), q(0.99)
}

// Setup is how the runs were made, for WriteText.
type Setup struct {
	LatencyRate, LatencyCount int           // paced latency runs
	Duration                  time.Duration // measured time of each throughput run
	BusyPoll                  time.Duration // linkem's --busy-poll (0: off)
	CPUs                      int           // CPUs of the machine
}

// WriteText writes r as the bench's human-readable report.
func WriteText(w io.Writer, s Setup, r *Result) {
	pin := fmt.Sprintf("linkem pinned to CPU %d (GOMAXPROCS=1), sender+receiver on CPU %d", r.LinkemCPU, r.LoadCPU)
	if !r.Pinned {
		pin = "not pinned (taskset missing)"
	}
	if s.BusyPoll > 0 {
		pin += fmt.Sprintf("; linkem busy-polls %v after each packet", s.BusyPoll)
	}
	fmt.Fprintf(w, "protolab-linkem bench: no impairment configured; %s; %d CPUs\n", pin, s.CPUs)
	fmt.Fprintf(w, "\none-way latency, %d-byte UDP payloads paced at %d pkt/s (%d packets):\n", 64, s.LatencyRate, s.LatencyCount)
	fmt.Fprintf(w, "  %-16s %10s %10s %10s %6s\n", "", "p50", "p99", "max", "lost")
	for _, k := range []string{"without", "with"} {
		l := r.Latency[k]
		fmt.Fprintf(w, "  %-16s %8.1fus %8.1fus %8.1fus %6d\n", k+" linkem", l.P50us, l.P99us, l.Maxus, l.Lost)
	}
	fmt.Fprintf(w, "  %-16s %8.1fus %8.1fus\n", "added by linkem", r.AddedP50us, r.AddedP99us)
	fmt.Fprintf(w, "  %-16s %8.1fus %8.1fus   (read to verdict inside linkem, from its histogram)\n", "inside linkem", r.InternalP50us, r.InternalP99us)
	fmt.Fprintf(w, "\nthroughput, offered as fast as one sender CPU goes (%s measured per run);\n", s.Duration)
	fmt.Fprintf(w, "packets/s through B's veth without linkem, forwarded by linkem with it:\n")
	fmt.Fprintf(w, "  %-8s %16s %16s %16s %22s %s\n", "payload", "without linkem", "with linkem", "offered (with)",
		"linkem CPU (kernel)", "CPU/pkt   kernel drops queue_full/socket_full")
	for _, t := range r.Throughput {
		fmt.Fprintf(w, "  %-8s %10.0f pkt/s %10.0f pkt/s %10.0f pkt/s %14.0f%% (%3.0f%%) %6.2fus   %.0f/%.0f\n", fmt.Sprintf("%dB", t.Payload),
			t.WithoutPPS, t.WithPPS, t.OfferedPPS, 100*t.LinkemCPU, 100*t.LinkemSysShare, t.CPUPerPacketUS, t.KernelQFull, t.KernelSockFull)
	}
	fmt.Fprintf(w, "  (payload = UDP payload; the veth MTU is raised so that no size is fragmented)\n")
}
