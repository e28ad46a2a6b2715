package spims

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/internal/measure"
)

// Metric names; every metric has HELP with its unit.
var (
	descRequests  = prometheus.NewDesc("protolab_spims_requests_total", "Iterations started by the initiator: requests sent (request_response), transfers asked for (bulk_get), connections attempted (connect_disconnect).", nil, nil)
	descCompleted = prometheus.NewDesc("protolab_spims_completed_total", "Iterations completed by the initiator.", nil, nil)
	descTimeouts  = prometheus.NewDesc("protolab_spims_timeouts_total", "Iterations with no answer within the job's timeout.", nil, nil)
	descLate      = prometheus.NewDesc("protolab_spims_late_total", "Completed iterations slower than the job's late bound.", nil, nil)
	descSent      = prometheus.NewDesc("protolab_spims_sent_bytes_total", "Payload bytes sent (spims headers and transport framing excluded).", []string{"role"}, nil)
	descReceived  = prometheus.NewDesc("protolab_spims_received_bytes_total", "Payload bytes received (spims headers and transport framing excluded).", []string{"role"}, nil)
	descServed    = prometheus.NewDesc("protolab_spims_served_requests_total", "Requests answered by the responder (bulk_get starts count once).", nil, nil)
	descConns     = prometheus.NewDesc("protolab_spims_connections", "Connections the responder holds now.", nil, nil)
	descConnsTot  = prometheus.NewDesc("protolab_spims_accepted_connections_total", "Connections the responder accepted.", nil, nil)
	descRefused   = prometheus.NewDesc("protolab_spims_refused_messages_total", "Messages the responder refused before allocating for them, by reason (too_large: a response or unit past the transport's message; too_many_units: stamped units past what one stop answer carries; bad_hello: an expedited hello with a long token or a second one); each closes its connection.", []string{"reason"}, nil)
	descHist      = map[string]*prometheus.Desc{
		ProcRequestResponse:   prometheus.NewDesc("protolab_spims_round_trip_seconds", "Request/response round trip at the initiator, seconds.", nil, nil),
		ProcBulkGet:           prometheus.NewDesc("protolab_spims_transfer_seconds", "bulk_get transfer time at the receiver (start request sent to last unit read), seconds.", nil, nil),
		ProcConnectDisconnect: prometheus.NewDesc("protolab_spims_connect_disconnect_seconds", "Dial, optional exchange and close, seconds.", nil, nil),
	}
)

// Reasons the responder refuses a message (proto.go's bounds).
const (
	refusedTooLarge     = "too_large"
	refusedTooManyUnits = "too_many_units"
	refusedBadHello     = "bad_hello"
)

var refusedReasons = [...]string{refusedTooLarge, refusedTooManyUnits, refusedBadHello}

// promBuckets of the iteration histograms, seconds.
var promBuckets = []float64{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1, 2, 5, 10}

// Live counts a running initiator or responder for /metrics. A nil *Live
// counts nothing. It implements metrics.Collector.
type Live struct {
	Procedure string // the initiator's procedure; "" for a responder

	requests, completed, timeouts, late atomic.Uint64
	sent, received                      atomic.Uint64
	served, servedSent, servedRecv      atomic.Uint64
	conns                               atomic.Int64
	connsTotal                          atomic.Uint64
	refused                             [len(refusedReasons)]atomic.Uint64
	mu                                  sync.Mutex
	hist                                measure.Hist
}

func (l *Live) started() {
	if l != nil {
		l.requests.Add(1)
	}
}

func (l *Live) done(d, lateBound time.Duration, sent, received int) {
	if l == nil {
		return
	}
	l.completed.Add(1)
	if lateBound > 0 && d > lateBound {
		l.late.Add(1)
	}
	l.sent.Add(uint64(sent))
	l.received.Add(uint64(received))
	l.mu.Lock()
	l.hist.Add(d.Seconds())
	l.mu.Unlock()
}

func (l *Live) timedOut() {
	if l != nil {
		l.timeouts.Add(1)
	}
}

// refuse counts a message refused for reason.
func (l *Live) refuse(reason string) {
	if l == nil {
		return
	}
	for i, r := range refusedReasons {
		if r == reason {
			l.refused[i].Add(1)
		}
	}
}

// Refused is the number of messages the responder refused for reason.
func (l *Live) Refused(reason string) uint64 {
	for i, r := range refusedReasons {
		if r == reason {
			return l.refused[i].Load()
		}
	}
	return 0
}

// Progress is (started, completed, timeouts) so far.
func (l *Live) Progress() (started, completed, timeouts uint64) {
	return l.requests.Load(), l.completed.Load(), l.timeouts.Load()
}

// Update implements metrics.Collector.
func (l *Live) Update(ch chan<- prometheus.Metric) error {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if l.Procedure != "" {
		counter(descRequests, l.requests.Load())
		counter(descCompleted, l.completed.Load())
		counter(descTimeouts, l.timeouts.Load())
		counter(descLate, l.late.Load())
		counter(descSent, l.sent.Load(), "initiator")
		counter(descReceived, l.received.Load(), "initiator")
		l.mu.Lock()
		h := l.hist
		l.mu.Unlock()
		if d := descHist[l.Procedure]; d != nil {
			ch <- prometheus.MustNewConstHistogram(d, h.Count(), h.Sum(), h.Cumulative(promBuckets))
		}
		return nil
	}
	counter(descServed, l.served.Load())
	counter(descSent, l.servedSent.Load(), "responder")
	counter(descReceived, l.servedRecv.Load(), "responder")
	counter(descConnsTot, l.connsTotal.Load())
	for i, r := range refusedReasons {
		counter(descRefused, l.refused[i].Load(), r)
	}
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(l.conns.Load()))
	return nil
}
