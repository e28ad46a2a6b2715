package metrics

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"

	"protolab/agents/internal/counters"
)

func init() {
	Register("netdev", newNetDevCollector)
}

// netDevCollector exports /proc/net/dev counters of the data-plane
// interfaces: every interface of the agent's network namespace except lo
// and the management interfaces. The file is read on every scrape, so
// veths the lab adds after start-up appear on the next scrape.
type netDevCollector struct {
	procPath string
	excluded map[string]bool
	counters []netDevCounter
}

type netDevCounter struct {
	desc  *prometheus.Desc
	value func(procfs.NetDevLine) uint64
}

func newNetDevCollector(cfg Config) (Collector, error) {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(
			prometheus.BuildFQName(Namespace, "interface", name),
			help, []string{"interface"}, nil,
		)
	}
	return &netDevCollector{
		procPath: cfg.ProcPath,
		excluded: excludedInterfaces(cfg.MgmtInterfaces),
		counters: []netDevCounter{
			{desc("receive_bytes_total", "Bytes received on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.RxBytes }},
			{desc("transmit_bytes_total", "Bytes transmitted on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.TxBytes }},
			{desc("receive_packets_total", "Packets received on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.RxPackets }},
			{desc("transmit_packets_total", "Packets transmitted on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.TxPackets }},
			{desc("receive_drops_total", "Received packets dropped on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.RxDropped }},
			{desc("transmit_drops_total", "Packets dropped on transmit on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.TxDropped }},
			{desc("receive_errors_total", "Receive errors on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.RxErrors }},
			{desc("transmit_errors_total", "Transmit errors on a data-plane interface."),
				func(l procfs.NetDevLine) uint64 { return l.TxErrors }},
		},
	}, nil
}

func (c *netDevCollector) Update(ch chan<- prometheus.Metric) error {
	devs, err := counters.ReadNetDev(c.procPath)
	if err != nil {
		return fmt.Errorf("netdev: %w", err)
	}
	for name, line := range devs {
		if c.excluded[name] {
			continue
		}
		for _, ctr := range c.counters {
			ch <- prometheus.MustNewConstMetric(ctr.desc, prometheus.CounterValue, float64(ctr.value(line)), name)
		}
	}
	return nil
}

// ParseInterfaceList splits a comma-separated list of interface names
// ("eth0, mgmt0"), dropping blanks.
func ParseInterfaceList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// excludedInterfaces is the set of interfaces that are never data plane:
// lo plus the management interfaces.
func excludedInterfaces(mgmt []string) map[string]bool {
	ex := map[string]bool{"lo": true}
	for _, m := range mgmt {
		if m = strings.TrimSpace(m); m != "" {
			ex[m] = true
		}
	}
	return ex
}
