package metrics

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func cgroupFixture(name string) string { return filepath.Join("testdata", "cgroup", name) }

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestCgroupCPUCollector(t *testing.T) {
	tests := []struct {
		name    string
		root    string
		want    map[string]float64
		wantErr bool
	}{
		{
			name: "v1 unlimited",
			root: cgroupFixture("v1"),
			want: map[string]float64{
				"protolab_cpu_seconds_total":           1.5,
				"protolab_cpu_quota_cores":             0,
				"protolab_cpu_throttled_seconds_total": 0,
			},
		},
		{
			name: "v2 limited",
			root: cgroupFixture("v2-limited"),
			want: map[string]float64{
				"protolab_cpu_seconds_total":           12.345678,
				"protolab_cpu_quota_cores":             0.5,
				"protolab_cpu_throttled_seconds_total": 1.5,
			},
		},
		{
			name: "v2 root: throttling not exported",
			root: cgroupFixture("v2-root"),
			want: map[string]float64{
				"protolab_cpu_seconds_total": 987.654321,
				"protolab_cpu_quota_cores":   0,
			},
		},
		{
			name:    "missing files: error, no metrics",
			root:    t.TempDir(),
			want:    map[string]float64{},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newCgroupCPUCollector(Config{CgroupRoot: tt.root})
			if err != nil {
				t.Fatal(err)
			}
			got, err := updateValues(t, c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Update error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "cgroup_cpu: ") {
				t.Errorf("error %q is not prefixed with the collector name", err)
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d samples %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for k, v := range tt.want {
				if g, ok := got[k]; !ok || !approx(g, v) {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
		})
	}
}
