package metrics

import (
	"bytes"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// updateValues runs c.Update once and returns every sample as
// `name{label="value",...}` -> value, plus the error Update returned.
func updateValues(t *testing.T, c Collector) (map[string]float64, error) {
	t.Helper()
	ch := make(chan prometheus.Metric)
	errc := make(chan error, 1)
	go func() {
		errc <- safeUpdate(c, ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		out[sampleKey(t, m)] = sampleValue(t, m)
	}
	return out, <-errc
}

func sampleKey(t *testing.T, m prometheus.Metric) string {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatalf("writing metric: %v", err)
	}
	name := metricName(m.Desc())
	if len(pb.GetLabel()) == 0 {
		return name
	}
	labels := make([]string, 0, len(pb.GetLabel()))
	for _, l := range pb.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func sampleValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatalf("writing metric: %v", err)
	}
	switch {
	case pb.Counter != nil:
		return pb.GetCounter().GetValue()
	case pb.Gauge != nil:
		return pb.GetGauge().GetValue()
	}
	t.Fatalf("unexpected metric type: %v", &pb)
	return 0
}

// metricName extracts fqName from a Desc's String() form
// (Desc{fqName: "x", help: ...}); client_golang exposes no getter.
func metricName(d *prometheus.Desc) string {
	s := d.String()
	const key = `fqName: "`
	i := strings.Index(s, key)
	if i < 0 {
		return s
	}
	s = s[i+len(key):]
	return s[:strings.Index(s, `"`)]
}

// logBuffer is a concurrency-safe log sink for slog.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
