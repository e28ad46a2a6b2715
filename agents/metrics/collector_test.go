package metrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeCollector sends one gauge and returns err (or panics with panicMsg).
type fakeCollector struct {
	desc     *prometheus.Desc
	err      error
	panicMsg string
}

func newFake(name string, err error, panicMsg string) *fakeCollector {
	return &fakeCollector{
		desc:     prometheus.NewDesc("protolab_test_"+name, "Test metric.", nil, nil),
		err:      err,
		panicMsg: panicMsg,
	}
}

func (f *fakeCollector) Update(ch chan<- prometheus.Metric) error {
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, 1)
	return f.err
}

func TestSetSuccessAndFailure(t *testing.T) {
	logger, logs := newTestLogger()
	s := &Set{logger: logger, collectors: map[string]Collector{}}
	base := errors.New("file gone")
	for name, c := range map[string]Collector{
		"good":  newFake("good", nil, ""),
		"bad":   newFake("bad", fmt.Errorf("bad: reading x: %w", base), ""),
		"panic": newFake("panic", nil, "index out of range"),
	} {
		if err := s.Add(name, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("good", newFake("good2", nil, "")); err == nil {
		t.Error("Add of a duplicate name succeeded")
	}
	reg, err := NewRegistry(s)
	if err != nil {
		t.Fatal(err)
	}

	const scrapes = 3
	for i := 0; i < scrapes; i++ {
		err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP protolab_scrape_collector_success Whether a protolab agent collector succeeded during this scrape (1) or failed (0).
# TYPE protolab_scrape_collector_success gauge
protolab_scrape_collector_success{collector="bad"} 0
protolab_scrape_collector_success{collector="good"} 1
protolab_scrape_collector_success{collector="panic"} 0
`), "protolab_scrape_collector_success")
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := testutil.GatherAndCount(reg, "protolab_scrape_collector_duration_seconds")
	if err != nil || n != 3 {
		t.Errorf("duration samples = %d (err %v), want 3", n, err)
	}
	// A failing collector's metrics sent before the error are kept.
	if n, _ := testutil.GatherAndCount(reg, "protolab_test_bad"); n != 1 {
		t.Errorf("protolab_test_bad samples = %d, want 1", n)
	}

	// Each failing collector is logged exactly once per scrape (the
	// two GatherAndCount calls above were scrapes too: scrapes+2 in all).
	out := logs.String()
	for _, name := range []string{"bad", "panic"} {
		if got, want := strings.Count(out, "collector="+name+" "), scrapes+2; got != want {
			t.Errorf("collector %s logged %d times, want %d:\n%s", name, got, want, out)
		}
	}
	if strings.Contains(out, "collector=good ") {
		t.Errorf("successful collector was logged:\n%s", out)
	}
	if !strings.Contains(out, "file gone") || !strings.Contains(out, "index out of range") {
		t.Errorf("log lacks the underlying errors:\n%s", out)
	}
}

func TestNewSelectsCollectors(t *testing.T) {
	all, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(all.Names(), ","), "build_info,cgroup_cpu,netdev"; got != want {
		t.Errorf("default collectors = %s, want %s", got, want)
	}
	some, err := New(Config{}, "netdev")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(some.Names(), ","); got != "netdev" {
		t.Errorf("selected collectors = %s, want netdev", got)
	}
	if _, err := New(Config{}, "nosuch"); err == nil || !strings.Contains(err.Error(), "unknown collector") {
		t.Errorf("unknown collector: err = %v", err)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering netdev twice did not panic")
		}
	}()
	Register("netdev", newNetDevCollector)
}

func TestBuildInfoDefaults(t *testing.T) {
	s, err := New(Config{}, "build_info")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(s)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "protolab_agent_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != "dev" || labels["revision"] != "unknown" || !strings.HasPrefix(labels["goversion"], "go") {
			t.Errorf("build_info labels = %v", labels)
		}
		if v := mf.GetMetric()[0].GetGauge().GetValue(); v != 1 {
			t.Errorf("build_info value = %v, want 1", v)
		}
		return
	}
	t.Error("protolab_agent_build_info not exported")
}

func TestAgentRegistryServesBuildInfoAndTheCollector(t *testing.T) {
	reg, err := AgentRegistry(Config{Version: "v9", Revision: "abc"}, "probe", newFake("probe", nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if !slices.Contains(names, "protolab_agent_build_info") || !slices.Contains(names, "protolab_test_probe") {
		t.Fatalf("gathered %v", names)
	}
	if _, err := AgentRegistry(Config{}, "build_info", newFake("probe", nil, "")); err == nil {
		t.Fatal("a collector named build_info must not replace the build info")
	}
}
