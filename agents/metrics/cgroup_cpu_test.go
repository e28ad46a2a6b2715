package metrics

import (
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func cgroupFixture(name string) string { return filepath.Join("testdata", "cgroup", name) }

func TestReadCgroupCPU(t *testing.T) {
	tests := []struct {
		name     string
		root     string
		want     cpuSample
		wantErr  string // substring; empty = success
		notFound bool   // error must wrap fs.ErrNotExist
	}{
		{
			name: "v1 combined cpu,cpuacct, quota unlimited (-1)",
			root: cgroupFixture("v1"),
			want: cpuSample{UsageSeconds: 1.5, QuotaCores: 0, ThrottledSeconds: 0, HasThrottled: true},
		},
		{
			name: "v1 separate cpu and cpuacct mounts, quota 150000/100000",
			root: cgroupFixture("v1-split"),
			want: cpuSample{UsageSeconds: 2.75, QuotaCores: 1.5, ThrottledSeconds: 0.25, HasThrottled: true},
		},
		{
			name: "v1 cpuacct only: no quota file means unlimited, no throttling metric",
			root: cgroupFixture("v1-acct-only"),
			want: cpuSample{UsageSeconds: 42e-9},
		},
		{
			name: "v2 limited 50000/100000",
			root: cgroupFixture("v2-limited"),
			want: cpuSample{UsageSeconds: 12.345678, QuotaCores: 0.5, ThrottledSeconds: 1.5, HasThrottled: true},
		},
		{
			name: "v2 unlimited (max 100000)",
			root: cgroupFixture("v2-unlimited"),
			want: cpuSample{UsageSeconds: 2, QuotaCores: 0, ThrottledSeconds: 0, HasThrottled: true},
		},
		{
			name: "v2 root cgroup: no cpu.max, no throttled_usec",
			root: cgroupFixture("v2-root"),
			want: cpuSample{UsageSeconds: 987.654321},
		},
		{
			name:    "v1 malformed usage",
			root:    cgroupFixture("v1-malformed"),
			wantErr: "invalid syntax",
		},
		{
			name:    "v2 cpu.stat without usage_usec",
			root:    cgroupFixture("v2-no-usage"),
			wantErr: "no usage_usec",
		},
		{
			name:    "v2 malformed cpu.max",
			root:    cgroupFixture("v2-bad-max"),
			wantErr: "cpu.max",
		},
		{
			name:     "empty root: no v1 or v2 files",
			root:     t.TempDir(),
			wantErr:  "cpuacct.usage",
			notFound: true,
		},
		{
			name:     "root does not exist",
			root:     filepath.Join(t.TempDir(), "missing"),
			wantErr:  "cpuacct.usage",
			notFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readCgroupCPU(tt.root)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("want error containing %q, got %+v", tt.wantErr, got)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if tt.notFound && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("error %q does not wrap fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !approx(got.UsageSeconds, tt.want.UsageSeconds) || !approx(got.QuotaCores, tt.want.QuotaCores) ||
				!approx(got.ThrottledSeconds, tt.want.ThrottledSeconds) || got.HasThrottled != tt.want.HasThrottled {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestParseCPUMax(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"max 100000\n", 0, false},
		{"max", 0, false},
		{"50000 100000\n", 0.5, false},
		{"200000 100000", 2, false},
		{"150000", 1.5, false}, // period omitted: kernel default 100000
		{"", 0, true},
		{"lots 100000", 0, true},
		{"50000 0", 0, true},
		{"50000 100000 7", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCPUMax(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCPUMax(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if !approx(got, tt.want) {
			t.Errorf("parseCPUMax(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

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
