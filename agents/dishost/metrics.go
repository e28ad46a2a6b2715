package dishost

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/dis"
)

// Metric names (documented in dashboards/README.md).
var (
	descSentMessages = prometheus.NewDesc("protolab_messages_sent_total", "Messages sent (one per datagram).", nil, nil)
	descSentBytes    = prometheus.NewDesc("protolab_dis_sent_bytes_total", "UDP payload bytes sent.", nil, nil)
	descSendErrors   = prometheus.NewDesc("protolab_dis_send_errors_total", "sendmmsg calls that failed with ENOBUFS/EAGAIN (retried).", nil, nil)
	descRecvPackets  = prometheus.NewDesc("protolab_dis_received_packets_total", "Datagrams read.", nil, nil)
	descRecvTotal    = prometheus.NewDesc("protolab_messages_received_total", "Messages decoded and accepted.", nil, nil)
	descRecvMessages = prometheus.NewDesc("protolab_dis_received_messages_total", "Messages decoded and accepted, by PDU type.", []string{"pdu_type"}, nil)
	descRecvBytes    = prometheus.NewDesc("protolab_dis_received_bytes_total", "UDP payload bytes read.", nil, nil)
	descDropped      = prometheus.NewDesc("protolab_dis_dropped_total", "Datagrams not accepted, by reason (short, header, decode, padding, unwanted, unstamped).", []string{"reason"}, nil)
	descDelay        = prometheus.NewDesc("protolab_message_delay_seconds", "One-way delay from the PDU's absolute DIS timestamp to receipt.", nil, nil)
	descEntities     = prometheus.NewDesc("protolab_dis_entities", "Entities heard from within the 12 s timeout.", nil, nil)
	descTimeouts     = prometheus.NewDesc("protolab_dis_entity_timeouts_total", "Entities removed after 12 s of silence.", nil, nil)
	descGroups       = prometheus.NewDesc("protolab_dis_groups_joined", "Multicast groups joined.", nil, nil)
	descWork         = prometheus.NewDesc("protolab_dis_work_loop_iterations_total", "Chunks of the busy work loop done (about 1 us each).", nil, nil)
	descWorkBase     = prometheus.NewDesc("protolab_dis_work_loop_baseline_iterations_per_second", "Work loop rate measured before joining any group.", nil, nil)
)

// promBuckets of the delay histogram, seconds.
var promBuckets = []float64{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1}

// Collector exports a sender's and/or a receiver's figures.
type Collector struct {
	Sender   *Sender
	Receiver *Receiver
	Work     *WorkLoop
	Baseline func() float64
}

// Update implements metrics.Collector.
func (c *Collector) Update(ch chan<- prometheus.Metric) error {
	if s := c.Sender; s != nil {
		p, b, e := s.Snapshot()
		ch <- prometheus.MustNewConstMetric(descSentMessages, prometheus.CounterValue, float64(p))
		ch <- prometheus.MustNewConstMetric(descSentBytes, prometheus.CounterValue, float64(b))
		ch <- prometheus.MustNewConstMetric(descSendErrors, prometheus.CounterValue, float64(e))
	}
	if r := c.Receiver; r != nil {
		s := r.Snapshot()
		ch <- prometheus.MustNewConstMetric(descRecvPackets, prometheus.CounterValue, float64(s.Packets))
		ch <- prometheus.MustNewConstMetric(descRecvTotal, prometheus.CounterValue, float64(s.Messages))
		ch <- prometheus.MustNewConstMetric(descRecvBytes, prometheus.CounterValue, float64(s.Bytes))
		for _, t := range dis.Types {
			ch <- prometheus.MustNewConstMetric(descRecvMessages, prometheus.CounterValue, float64(s.ByType[t]), strconv.Itoa(int(t)))
		}
		for _, why := range DropReasons {
			ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(s.Dropped[why]), why)
		}
		ch <- prometheus.MustNewConstHistogram(descDelay, s.Delay.Count(), s.Delay.Sum(), s.Delay.Cumulative(promBuckets))
		ch <- prometheus.MustNewConstMetric(descEntities, prometheus.GaugeValue, float64(s.Entities))
		ch <- prometheus.MustNewConstMetric(descTimeouts, prometheus.CounterValue, float64(s.Timeouts))
		ch <- prometheus.MustNewConstMetric(descGroups, prometheus.GaugeValue, float64(r.Joined))
	}
	if c.Work != nil {
		ch <- prometheus.MustNewConstMetric(descWork, prometheus.CounterValue, float64(c.Work.Iterations()))
		if c.Baseline != nil {
			ch <- prometheus.MustNewConstMetric(descWorkBase, prometheus.GaugeValue, c.Baseline())
		}
	}
	return nil
}
