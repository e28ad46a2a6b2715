package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	Register("build_info", newBuildInfoCollector)
}

// buildInfoCollector exports a constant 1 labelled with the agent's build.
type buildInfoCollector struct {
	metric prometheus.Metric
}

func newBuildInfoCollector(cfg Config) (Collector, error) {
	desc := prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "agent", "build_info"),
		"A metric with a constant '1' value labelled by the version and revision the protolab agent was built from and the Go version that built it.",
		[]string{"version", "revision", "goversion"}, nil,
	)
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, cfg.Version, cfg.Revision, runtime.Version())
	if err != nil {
		return nil, err
	}
	return &buildInfoCollector{metric: m}, nil
}

func (c *buildInfoCollector) Update(ch chan<- prometheus.Metric) error {
	ch <- c.metric
	return nil
}
