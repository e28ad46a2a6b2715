package linkembench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestNewLatRes(t *testing.T) {
	seq := func(n int) []int64 { // n..1 microseconds, reversed: NewLatRes sorts
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(n-i) * 1000
		}
		return out
	}
	tests := []struct {
		name string
		sent int
		lat  []int64
		want LatRes
	}{
		{"all lost", 100, nil, LatRes{RatePPS: 10, Sent: 100, Lost: 100}},
		{"one packet", 2, []int64{1500}, LatRes{RatePPS: 10, Sent: 2, Lost: 1, P50us: 1.5, P99us: 1.5, Maxus: 1.5}},
		// index p*(n-1), rounded down: 50 and 99 of 0..100
		{"101 packets", 101, seq(101), LatRes{RatePPS: 10, Sent: 101, P50us: 51, P99us: 100, Maxus: 101}},
		{"10 packets", 12, seq(10), LatRes{RatePPS: 10, Sent: 12, Lost: 2, P50us: 5, P99us: 9, Maxus: 10}},
	}
	for _, tt := range tests {
		if got := NewLatRes(10, tt.sent, tt.lat); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestSetAdded(t *testing.T) {
	r := Result{Latency: map[string]LatRes{"without": {P50us: 20, P99us: 40}, "with": {P50us: 95, P99us: 160}}}
	r.SetAdded()
	if r.AddedP50us != 75 || r.AddedP99us != 120 {
		t.Errorf("added %v/%v, want 75/120", r.AddedP50us, r.AddedP99us)
	}
}

func TestNewTputRes(t *testing.T) {
	s := time.Second
	before := ChildReading{User: 10 * s, Sys: 5 * s, QueueFull: 100, SocketFull: 7}
	tests := []struct {
		name  string
		rate  float64
		after ChildReading
		want  TputRes
	}{
		{"a busy second", 250000, ChildReading{User: 10*s + 600*time.Millisecond, Sys: 5*s + 400*time.Millisecond, QueueFull: 150, SocketFull: 7},
			TputRes{Payload: 64, WithoutPPS: 800000, WithPPS: 250000, OfferedPPS: 700000, KernelQFull: 50,
				LinkemCPU: 0.5, LinkemSysShare: 0.4, CPUPerPacketUS: 2}},
		{"no CPU used", 250000, before,
			TputRes{Payload: 64, WithoutPPS: 800000, WithPPS: 250000, OfferedPPS: 700000}},
		{"nothing forwarded: per packet over one packet", 0, ChildReading{User: 11 * s, Sys: 5 * s, QueueFull: 100, SocketFull: 9},
			TputRes{Payload: 64, WithoutPPS: 800000, OfferedPPS: 700000, KernelSockFull: 2,
				LinkemCPU: 0.5, CPUPerPacketUS: 1e6}},
	}
	for _, tt := range tests {
		got := NewTputRes(64, 800000, tt.rate, 700000, before, tt.after, 2*s)
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestAddedDelayUS(t *testing.T) {
	const name = "protolab_linkem_added_delay_seconds"
	tests := []struct {
		name     string
		text     string
		p50, p99 float64 // NaN: no estimate
	}{
		{"no histogram", "protolab_linkem_held_packets 0\n", math.NaN(), math.NaN()},
		{"empty histogram", name + `_bucket{link="a",le="1e-05"} 0` + "\n" + name + `_bucket{link="a",le="+Inf"} 0` + "\n",
			math.NaN(), math.NaN()},
		{"interpolated within buckets", "# TYPE " + name + " histogram\n" +
			name + `_bucket{link="a",le="1e-05"} 40` + "\n" +
			name + `_bucket{link="a",le="2e-05"} 90` + "\n" +
			name + `_bucket{link="a",le="+Inf"} 100` + "\n" +
			name + `_sum{link="a"} 0.001` + "\n" + name + `_count{link="a"} 100` + "\n",
			12, 20}, // p50: 10 + 10*(50-40)/50 us; p99 falls in +Inf: the last finite bound
		{"first bucket from 0", name + `_bucket{le="4e-06"} 10` + "\n" + name + `_bucket{le="+Inf"} 10` + "\n", 2, 3.96},
	}
	for _, tt := range tests {
		p50, p99 := AddedDelayUS(strings.NewReader(tt.text))
		for _, c := range []struct{ got, want float64 }{{p50, tt.p50}, {p99, tt.p99}} {
			if math.IsNaN(c.want) != math.IsNaN(c.got) || (!math.IsNaN(c.got) && math.Abs(c.got-c.want) > 1e-9) {
				t.Errorf("%s: p50/p99 %v/%v, want %v/%v", tt.name, p50, p99, tt.p50, tt.p99)
				break
			}
		}
	}
}

// The report's layout is what people paste into issues: it stays as it is.
func TestWriteText(t *testing.T) {
	r := &Result{LinkemCPU: 1, LoadCPU: 0, Pinned: true, Latency: map[string]LatRes{
		"without": {RatePPS: 10000, Sent: 10000, Lost: 0, P50us: 21.4, P99us: 40.25, Maxus: 180},
		"with":    {RatePPS: 10000, Sent: 10000, Lost: 3, P50us: 95.5, P99us: 160, Maxus: 2500.04}},
		InternalP50us: 2.5, InternalP99us: 9.75,
		Throughput: []TputRes{{Payload: 64, WithoutPPS: 812345.4, WithPPS: 301234.6, OfferedPPS: 790000, KernelQFull: 12,
			LinkemCPU: 0.995, LinkemSysShare: 0.4123, CPUPerPacketUS: 3.3}}}
	r.SetAdded()
	var b bytes.Buffer
	WriteText(&b, Setup{LatencyRate: 10000, LatencyCount: 10000, Duration: 2 * time.Second, BusyPoll: 50 * time.Microsecond, CPUs: 4}, r)
	want := `protolab-linkem bench: no impairment configured; linkem pinned to CPU 1 (GOMAXPROCS=1), sender+receiver on CPU 0; linkem busy-polls 50µs after each packet; 4 CPUs

one-way latency, 64-byte UDP payloads paced at 10000 pkt/s (10000 packets):
                          p50        p99        max   lost
  without linkem       21.4us     40.2us    180.0us      0
  with linkem          95.5us    160.0us   2500.0us      3
  added by linkem      74.1us    119.8us
  inside linkem         2.5us      9.8us   (read to verdict inside linkem, from its histogram)

throughput, offered as fast as one sender CPU goes (2s measured per run);
packets/s through B's veth without linkem, forwarded by linkem with it:
  payload    without linkem      with linkem   offered (with)    linkem CPU (kernel) CPU/pkt   kernel drops queue_full/socket_full
  64B          812345 pkt/s     301235 pkt/s     790000 pkt/s            100% ( 41%)   3.30us   12/0
  (payload = UDP payload; the veth MTU is raised so that no size is fragmented)
`
	if b.String() != want {
		t.Errorf("report\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	r.Pinned = false
	WriteText(&b, Setup{LatencyRate: 10000, LatencyCount: 10000, Duration: 2 * time.Second, CPUs: 1}, r)
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "protolab-linkem bench: no impairment configured; not pinned (taskset missing); 1 CPUs" {
		t.Errorf("unpinned first line %q", first)
	}
}
