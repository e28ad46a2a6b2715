package tp4

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names (role is "sender" or "receiver").
var (
	descSent    = prometheus.NewDesc("protolab_tp4_tpdus_sent_total", "TPDUs sent, by type.", []string{"role", "pdu_type"}, nil)
	descRecv    = prometheus.NewDesc("protolab_tp4_tpdus_received_total", "TPDUs decoded, by type.", []string{"role", "pdu_type"}, nil)
	descRetx    = prometheus.NewDesc("protolab_tp4_retransmissions_total", "TPDUs sent again after their timer ran out (DT, ED, control: CR/DR).", []string{"pdu_type"}, nil)
	descDropped = prometheus.NewDesc("protolab_tp4_dropped_total", "Datagrams not taken, by reason (decode errors: short, length, type, param, value, too_large; ref, state, window, buffer, duplicate, ...).", []string{"role", "reason"}, nil)
	descDup     = prometheus.NewDesc("protolab_tp4_duplicate_dts_received_total", "DTs received again (already delivered or held): needless retransmissions.", nil, nil)
	descSendBuf = prometheus.NewDesc("protolab_tp4_send_buffer_bytes", "User data held by the sender until acknowledged.", nil, nil)
	descRecvBuf = prometheus.NewDesc("protolab_tp4_receive_buffer_bytes", "User data held by the receiver (after a gap, or of an incomplete TSDU).", nil, nil)
	descOctets  = prometheus.NewDesc("protolab_tp4_delivered_bytes_total", "User data delivered in complete TSDUs.", nil, nil)
	descTSDUs   = prometheus.NewDesc("protolab_tp4_tsdus_delivered_total", "TSDUs delivered.", nil, nil)
)

var pduTypes = []string{"CR", "CC", "DR", "DC", "DT", "ED", "AK", "EA"}

// Collector exports a sender's or a receiver's counters, read under Mu
// (the Loop's).
type Collector struct {
	Mu       *sync.Mutex
	Sender   *Sender
	Receiver *Receiver
}

// Update implements metrics.Collector.
func (c *Collector) Update(ch chan<- prometheus.Metric) error {
	c.Mu.Lock()
	now := time.Now()
	var ss *SenderStats
	var rs *ReceiverStats
	if c.Sender != nil {
		st := c.Sender.Stats(now)
		ss = &st
	}
	if c.Receiver != nil {
		st := c.Receiver.Stats(now)
		rs = &st
	}
	c.Mu.Unlock()
	counts := func(d *prometheus.Desc, role string, m map[string]uint64) {
		for _, t := range pduTypes {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(m[t]), role, t)
		}
	}
	drops := func(role string, m map[string]uint64) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(m[k]), role, k)
		}
	}
	if ss != nil {
		counts(descSent, "sender", ss.Sent)
		counts(descRecv, "sender", ss.Received)
		drops("sender", ss.Dropped)
		ch <- prometheus.MustNewConstMetric(descRetx, prometheus.CounterValue, float64(ss.DTRetransmissions), "DT")
		ch <- prometheus.MustNewConstMetric(descRetx, prometheus.CounterValue, float64(ss.EDRetransmissions), "ED")
		ch <- prometheus.MustNewConstMetric(descRetx, prometheus.CounterValue, float64(ss.CtlRetransmissions), "control")
		ch <- prometheus.MustNewConstMetric(descSendBuf, prometheus.GaugeValue, float64(ss.SendBufferNow))
	}
	if rs != nil {
		counts(descSent, "receiver", rs.Sent)
		counts(descRecv, "receiver", rs.Received)
		drops("receiver", rs.Dropped)
		ch <- prometheus.MustNewConstMetric(descDup, prometheus.CounterValue, float64(rs.Duplicates))
		ch <- prometheus.MustNewConstMetric(descRecvBuf, prometheus.GaugeValue, float64(rs.RecvBufferNow))
		ch <- prometheus.MustNewConstMetric(descOctets, prometheus.CounterValue, float64(rs.Octets))
		ch <- prometheus.MustNewConstMetric(descTSDUs, prometheus.CounterValue, float64(rs.TSDUs))
	}
	return nil
}
