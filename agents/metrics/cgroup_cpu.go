package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/internal/counters"
)

func init() {
	Register("cgroup_cpu", newCgroupCPUCollector)
}

// cgroupCPUCollector reports the CPU used by the cgroup mounted at root,
// which inside a container is the container itself (read by
// counters.ReadCgroupCPU). It fails when the usage counter cannot be read;
// a missing throttling counter is simply not exported.
type cgroupCPUCollector struct {
	root string

	usage     *prometheus.Desc
	quota     *prometheus.Desc
	throttled *prometheus.Desc
}

func newCgroupCPUCollector(cfg Config) (Collector, error) {
	return &cgroupCPUCollector{
		root: cfg.CgroupRoot,
		usage: prometheus.NewDesc(
			prometheus.BuildFQName(Namespace, "cpu", "seconds_total"),
			"CPU time consumed by this node's cgroup (all its processes, user and system), in seconds.",
			nil, nil,
		),
		quota: prometheus.NewDesc(
			prometheus.BuildFQName(Namespace, "cpu", "quota_cores"),
			"CPU budget of this node's cgroup in cores (CFS quota divided by period); 0 when unlimited.",
			nil, nil,
		),
		throttled: prometheus.NewDesc(
			prometheus.BuildFQName(Namespace, "cpu", "throttled_seconds_total"),
			"Time this node's cgroup spent throttled by its CPU quota, in seconds.",
			nil, nil,
		),
	}, nil
}

func (c *cgroupCPUCollector) Update(ch chan<- prometheus.Metric) error {
	s, err := counters.ReadCgroupCPU(c.root)
	if err != nil {
		return fmt.Errorf("cgroup_cpu: %w", err)
	}
	ch <- prometheus.MustNewConstMetric(c.usage, prometheus.CounterValue, s.UsageSeconds)
	ch <- prometheus.MustNewConstMetric(c.quota, prometheus.GaugeValue, s.QuotaCores)
	if s.HasThrottled {
		ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, s.ThrottledSeconds)
	}
	return nil
}
