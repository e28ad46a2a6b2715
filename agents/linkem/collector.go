package linkem

import (
	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/metrics"
)

// Actions are the values of the action label of
// protolab_linkem_packets_total.
var Actions = []string{"passed", "dropped", "corrupted", "duplicated", "reordered", "overflow"}

func linkemDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "linkem", name), help,
		append([]string{"link"}, labels...), nil)
}

var (
	packetsDesc = linkemDesc("packets_total",
		"Packet instances by what linkem did to them. passed, dropped and overflow are final "+
			"(received + duplicated = passed + dropped + overflow + held); corrupted, reordered and "+
			"duplicated count decisions (a duplicated packet's copy also ends in one of the final actions).",
		"action")
	receivedDesc = linkemDesc("received_packets_total", "Packets received from the netfilter queue.")
	heldDesc     = linkemDesc("held_packets", "Packet instances held, waiting for their release time.")
	leadDesc     = linkemDesc("timer_lead_seconds", "How early the release timer is armed to make up for its wake-up latency (a running mean of how late it fired, at most 250 us).")
	changesDesc  = linkemDesc("config_changes_total", "Configuration changes applied through PUT /config.")
	batchDesc    = linkemDesc("batch_accepted_packets_total", "Passed packets accepted by a batch verdict (one message for a run of plain accepts with nothing else waiting), a part of packets_total{action=\"passed\"}.")
	genDesc      = linkemDesc("config_generation", "Generation of the configuration in force (0 = the one given at start).")
	errorsDesc   = linkemDesc("errors_total",
		"Failures: verdict = a verdict the kernel refused, inject = a duplicate that could not be sent, "+
			"skipped = a corruption or duplication not applied because the packet had been copied truncated.",
		"kind")
	kWaitingDesc = linkemDesc("kernel_queue_packets", "Packets in the kernel's queue waiting for a verdict (held ones included), from /proc/net/netfilter/nfnetlink_queue.")
	polledDesc   = linkemDesc("busy_polled_packets_total", "Packets read while busy polling (--busy-poll), without a wake-up of their own.")
	kDroppedDesc = linkemDesc("kernel_dropped_packets_total",
		"Packets the kernel dropped before linkem saw them: queue_full = kernel queue at its length, socket_full = netlink socket buffer full (linkem too slow).",
		"cause")
)

// Collector exports an emulator's counters through the metrics package
// (add it to a metrics.Set with Set.Add).
type Collector struct {
	emu   *Emulator
	queue *Queue // optional: kernel statistics
}

// NewCollector returns a collector for emu, with kernel queue statistics
// when queue is not nil.
func NewCollector(emu *Emulator, queue *Queue) *Collector {
	return &Collector{emu: emu, queue: queue}
}

// Update implements metrics.Collector.
func (c *Collector) Update(ch chan<- prometheus.Metric) error {
	e := c.emu
	link := e.name
	n := e.Counts()
	for i, v := range []uint64{n.Passed, n.Dropped, n.Corrupted, n.Duplicated, n.Reordered, n.Overflow} {
		ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(v), link, Actions[i])
	}
	ch <- prometheus.MustNewConstMetric(receivedDesc, prometheus.CounterValue, float64(n.Received), link)
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(n.Held), link)
	ch <- prometheus.MustNewConstMetric(leadDesc, prometheus.GaugeValue, e.Lead().Seconds(), link)
	ch <- prometheus.MustNewConstMetric(batchDesc, prometheus.CounterValue, float64(n.BatchAccepted), link)
	ch <- prometheus.MustNewConstMetric(changesDesc, prometheus.CounterValue, float64(n.ConfigChanges), link)
	ch <- prometheus.MustNewConstMetric(genDesc, prometheus.GaugeValue, float64(e.params.Load().generation), link)
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n.VerdictErrors), link, "verdict")
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n.InjectErrors), link, "inject")
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n.Skipped), link, "skipped")
	e.delay.Collect(ch)
	if c.queue == nil {
		return nil
	}
	ch <- prometheus.MustNewConstMetric(polledDesc, prometheus.CounterValue, float64(c.queue.BusyPolled()), link)
	ks, err := c.queue.KernelStats()
	if err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(kWaitingDesc, prometheus.GaugeValue, float64(ks.Waiting), link)
	ch <- prometheus.MustNewConstMetric(kDroppedDesc, prometheus.CounterValue, float64(ks.QueueFull), link, "queue_full")
	ch <- prometheus.MustNewConstMetric(kDroppedDesc, prometheus.CounterValue, float64(ks.SocketFull), link, "socket_full")
	return nil
}
