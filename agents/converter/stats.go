package converter

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/bundle"
	"protolab/agents/internal/measure"
)

// Drop reasons (protolab_converter_dropped_total{reason}); the bundle
// package's decoding reasons come on top.
const (
	DropCongestion = "congestion"     // low priority above 80 % of the link
	DropUnknown    = "unknown_sender" // a bundle from an address that is neither a host nor a C_1
	DropNoInterest = "no_interest"    // no host wants it (and it is not the outside's)
	DropControl    = "control"        // malformed control message
	DropHeader     = "header"         // a message without a data header
	DropOverflow   = "overflow"       // one message larger than a bundle may be
)

// Stats are one process's counters; safe for concurrent use.
type Stats struct {
	mu        sync.Mutex
	Role      string
	Sent      uint64
	SentTo    map[int]uint64
	Received  uint64
	Reflected uint64
	// priority messages: originated, addressed per host, handed up; and the
	// reliable mode's resent messages and the repeats a receiver set aside
	SentPriority     uint64
	SentPriorityTo   map[int]uint64
	ReceivedPriority uint64
	Retransmitted    uint64
	Duplicates       uint64
	AckedAfter       map[int]uint64 // numbers fully acknowledged, by the sendings they took
	Delay            measure.Hist   // one-way message delay at the receiving host
	Added            measure.Hist   // time a message spent in this converter
	PerBundle        measure.Hist   // messages per bundle received (as a count, not seconds)
	BundlesIn        uint64
	BundlesOut       uint64
	PacketsIn        uint64
	PacketsOut       uint64
	ToOutside        uint64 // C_2: host messages given to a C_1 to send out (--outbound)
	Dropped          map[string]uint64
	Congestion       int
	Utilisation      float64
	Groups           int
	Start            time.Time
	Elapsed          time.Duration
}

// NewStats starts a role's counters.
func NewStats(role string) *Stats {
	return &Stats{Role: role, SentTo: map[int]uint64{}, SentPriorityTo: map[int]uint64{}, Dropped: map[string]uint64{},
		AckedAfter: map[int]uint64{}, Start: time.Now()}
}

// Drop counts n messages or bundles dropped for a reason.
func (s *Stats) Drop(reason string, n uint64) {
	s.mu.Lock()
	s.Dropped[reason] += n
	s.mu.Unlock()
}

// In counts a packet in and says whether it is long enough to carry a host's address (a shorter one is
// dropped as DropHeader).
func (s *Stats) In(b []byte) bool {
	s.mu.Lock()
	s.PacketsIn++
	s.mu.Unlock()
	if len(b) < bundle.AddrBytes {
		s.Drop(DropHeader, 1)
		return false
	}
	return true
}

// Acked counts a number fully acknowledged after `sendings` (0: not yet, nothing counted).
func (s *Stats) Acked(sendings int) {
	if sendings > 0 {
		s.mu.Lock()
		s.AckedAfter[sendings]++
		s.mu.Unlock()
	}
}

// Summary is the JSON line a process prints at its end (read by
// protolab/workloads/converter_runner.py).
func (s *Stats) Summary() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := map[string]uint64{}
	for k, v := range s.Dropped {
		dropped[k] = v
	}
	elapsed := s.Elapsed
	if elapsed == 0 {
		elapsed = time.Since(s.Start)
	}
	out := map[string]any{
		"role": s.Role, "sent": s.Sent, "sent_to": byHost(s.SentTo), "received": s.Received, "reflected": s.Reflected,
		"sent_priority": s.SentPriority, "sent_priority_to": byHost(s.SentPriorityTo),
		"received_priority": s.ReceivedPriority, "retransmitted": s.Retransmitted, "duplicates": s.Duplicates,
		"dropped": dropped, "bundles_in": s.BundlesIn, "bundles_out": s.BundlesOut,
		"packets_in": s.PacketsIn, "packets_out": s.PacketsOut, "elapsed_seconds": elapsed.Seconds(),
		"congestion_level": s.Congestion, "groups": s.Groups, "to_outside": s.ToOutside,
	}
	if len(s.AckedAfter) > 0 {
		out["acked_after_sendings"] = byHost(s.AckedAfter)
	}
	put := func(key string, v float64) {
		if !math.IsNaN(v) {
			out[key] = v
		}
	}
	if s.Delay.Count() > 0 {
		put("delay_mean_seconds", s.Delay.Mean())
		put("delay_p50_seconds", s.Delay.Quantile(0.5))
		put("delay_p99_seconds", s.Delay.Quantile(0.99))
	}
	if s.Added.Count() > 0 {
		put("added_delay_mean_seconds", s.Added.Mean())
		put("added_delay_p99_seconds", s.Added.Quantile(0.99))
	}
	if s.PerBundle.Count() > 0 {
		put("messages_per_bundle", s.PerBundle.Mean())
	}
	return out
}

// byHost is a per-host count with string keys in id order (JSON).
func byHost(n map[int]uint64) map[string]uint64 {
	ids := make([]int, 0, len(n))
	for id := range n {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make(map[string]uint64, len(ids))
	for _, id := range ids {
		out[strconv.Itoa(id)] = n[id]
	}
	return out
}

var (
	descSent       = prometheus.NewDesc("protolab_messages_sent_total", "Messages this process originated (host, WAN source).", nil, nil)
	descReceived   = prometheus.NewDesc("protolab_messages_received_total", "Messages delivered to this host's application.", nil, nil)
	descSentPrio   = prometheus.NewDesc("protolab_messages_sent_priority_total", "Messages originated with the priority flag.", nil, nil)
	descRecvPrio   = prometheus.NewDesc("protolab_messages_received_priority_total", "Priority messages delivered to this host's application.", nil, nil)
	descRetrans    = prometheus.NewDesc("protolab_converter_retransmitted_total", "Priority messages sent again for want of an acknowledgement (--reliable).", nil, nil)
	descDuplicates = prometheus.NewDesc("protolab_converter_duplicates_total", "Repeated priority messages received and set aside (--reliable).", nil, nil)
	descReflected  = prometheus.NewDesc("protolab_converter_reflected_total", "A host's own messages delivered back to it (must stay 0).", nil, nil)
	descDelay      = prometheus.NewDesc("protolab_message_delay_seconds", "One-way message delay, sender's clock to this host's application.", nil, nil)
	descAdded      = prometheus.NewDesc("protolab_converter_added_delay_seconds", "Time a message spent inside this converter (arrival to the bundle leaving).", nil, nil)
	descPerBundle  = prometheus.NewDesc("protolab_converter_messages_per_bundle", "Messages per bundle received.", nil, nil)
	descBundles    = prometheus.NewDesc("protolab_converter_bundles_total", "Bundles by direction (in, out).", []string{"direction"}, nil)
	descOutside    = prometheus.NewDesc("protolab_converter_to_outside_total", "C_2: host messages given to a C_1 to send toward the outside (--outbound).", nil, nil)
	descPackets    = prometheus.NewDesc("protolab_converter_packets_total", "One-message IP multicast packets by direction (in, out).", []string{"direction"}, nil)
	descDropped    = prometheus.NewDesc("protolab_converter_dropped_total", "Messages or bundles dropped, by reason.", []string{"reason"}, nil)
	descCongestion = prometheus.NewDesc("protolab_converter_congestion_level", "C_2's congestion level: 0 normal, 1 low-priority messages dropped.", nil, nil)
	descUtil       = prometheus.NewDesc("protolab_converter_link_utilisation_ratio", "C_2's own sending toward the hosts over the link's capacity (100 ms windows).", nil, nil)
)

var delayBuckets = []float64{100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1, 2, 5}
var perBundleBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}

// Update implements metrics.Collector.
func (s *Stats) Update(ch chan<- prometheus.Metric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	c(descSent, s.Sent)
	c(descReceived, s.Received)
	c(descReflected, s.Reflected)
	c(descSentPrio, s.SentPriority)
	c(descRecvPrio, s.ReceivedPriority)
	c(descRetrans, s.Retransmitted)
	c(descDuplicates, s.Duplicates)
	ch <- prometheus.MustNewConstHistogram(descDelay, s.Delay.Count(), hsum(&s.Delay), s.Delay.Cumulative(delayBuckets))
	ch <- prometheus.MustNewConstHistogram(descAdded, s.Added.Count(), hsum(&s.Added), s.Added.Cumulative(delayBuckets))
	ch <- prometheus.MustNewConstHistogram(descPerBundle, s.PerBundle.Count(), hsum(&s.PerBundle), s.PerBundle.Cumulative(perBundleBuckets))
	c(descBundles, s.BundlesIn, "in")
	c(descBundles, s.BundlesOut, "out")
	c(descPackets, s.PacketsIn, "in")
	c(descPackets, s.PacketsOut, "out")
	c(descOutside, s.ToOutside)
	for k, v := range s.Dropped {
		c(descDropped, v, k)
	}
	ch <- prometheus.MustNewConstMetric(descCongestion, prometheus.GaugeValue, float64(s.Congestion))
	ch <- prometheus.MustNewConstMetric(descUtil, prometheus.GaugeValue, s.Utilisation)
	return nil
}

func hsum(h *measure.Hist) float64 {
	if h.Count() == 0 {
		return 0
	}
	return h.Mean() * float64(h.Count())
}
