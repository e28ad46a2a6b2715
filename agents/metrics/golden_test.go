package metrics

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const goldenFile = "testdata/metrics.golden"

// goldenConfig is the fixture node: cgroup v2 with a 0.5 core quota, and a
// net/dev with lo, the mgmt eth0 and three data-plane interfaces.
func goldenConfig() Config {
	return Config{
		CgroupRoot:     cgroupFixture("v2-limited"),
		ProcPath:       procFixture,
		MgmtInterfaces: []string{"eth0"},
		Version:        "0.1.0",
		Revision:       "golden",
	}
}

// renderFixtureMetrics scrapes the full registry built the way
// protolab-agent builds it and renders the text exposition, with the
// run-dependent values (scrape durations, Go version) normalised.
func renderFixtureMetrics(t *testing.T) []byte {
	t.Helper()
	s, err := New(goldenConfig())
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
	normalise(mfs)

	if problems, err := promlint.NewWithMetricFamilies(mfs).Lint(); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}

	var buf bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func normalise(mfs []*dto.MetricFamily) {
	zero := 0.0
	goVersion := "GOVERSION"
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "protolab_scrape_collector_duration_seconds":
				m.Gauge.Value = &zero
			case "protolab_agent_build_info":
				for _, l := range m.GetLabel() {
					if l.GetName() == "goversion" && l.GetValue() == runtime.Version() {
						l.Value = &goVersion
					}
				}
			}
		}
	}
}

func TestGoldenExposition(t *testing.T) {
	got := renderFixtureMetrics(t)
	if *update {
		if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", goldenFile)
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (run go test ./metrics -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exposition differs from %s (rerun with -update if intended)\n--- got:\n%s", goldenFile, got)
	}
}

func TestGoldenPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed: cannot run 'promtool check metrics' (install the prometheus package to enable this test)")
	}
	want, err := os.ReadFile(filepath.Clean(goldenFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, input := range map[string][]byte{"golden": want, "live": renderFixtureMetrics(t)} {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool check metrics (%s) failed: %v\n%s", name, err, out)
		}
	}
}
