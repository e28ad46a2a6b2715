package counters

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fake cgroup roots are shared with the metrics collector's tests.
func cgroupFixture(name string) string {
	return filepath.Join("..", "..", "metrics", "testdata", "cgroup", name)
}

// writeTree makes a directory holding files (relative path -> content).
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestReadCgroupCPU(t *testing.T) {
	tests := []struct {
		name     string
		root     string
		want     CgroupCPU
		wantErr  string // substring; empty = success
		notFound bool   // error must wrap fs.ErrNotExist
	}{
		{
			name: "v1 combined cpu,cpuacct, quota unlimited (-1)",
			root: cgroupFixture("v1"),
			want: CgroupCPU{Usage: 1500 * time.Millisecond, UsageSeconds: 1.5, QuotaCores: 0, ThrottledSeconds: 0, HasThrottled: true},
		},
		{
			name: "v1 separate cpu and cpuacct mounts, quota 150000/100000",
			root: cgroupFixture("v1-split"),
			want: CgroupCPU{Usage: 2750 * time.Millisecond, UsageSeconds: 2.75, QuotaCores: 1.5, ThrottledSeconds: 0.25, HasThrottled: true},
		},
		{
			name: "v1 cpuacct only: no quota file means unlimited, no throttling metric",
			root: cgroupFixture("v1-acct-only"),
			want: CgroupCPU{Usage: 42, UsageSeconds: 42e-9},
		},
		{
			name: "v1 combined cpuacct,cpu, quota 200000/100000",
			root: writeTree(t, map[string]string{
				"cpuacct,cpu/cpuacct.usage":     "3000000000\n",
				"cpuacct,cpu/cpu.cfs_quota_us":  "200000\n",
				"cpuacct,cpu/cpu.cfs_period_us": "100000\n",
				"cpuacct,cpu/cpu.stat":          "nr_periods 1\nthrottled_time 500000000\n",
			}),
			want: CgroupCPU{Usage: 3 * time.Second, UsageSeconds: 3, QuotaCores: 2, ThrottledSeconds: 0.5, HasThrottled: true},
		},
		{
			name: "v2 limited 50000/100000",
			root: cgroupFixture("v2-limited"),
			want: CgroupCPU{Usage: 12345678 * time.Microsecond, UsageSeconds: 12.345678, QuotaCores: 0.5, ThrottledSeconds: 1.5, HasThrottled: true},
		},
		{
			name: "v2 unlimited (max 100000)",
			root: cgroupFixture("v2-unlimited"),
			want: CgroupCPU{Usage: 2 * time.Second, UsageSeconds: 2, QuotaCores: 0, ThrottledSeconds: 0, HasThrottled: true},
		},
		{
			name: "v2 root cgroup: no cpu.max, no throttled_usec",
			root: cgroupFixture("v2-root"),
			want: CgroupCPU{Usage: 987654321 * time.Microsecond, UsageSeconds: 987.654321},
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
			got, err := ReadCgroupCPU(tt.root)
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
			if got.Usage != tt.want.Usage || !approx(got.UsageSeconds, tt.want.UsageSeconds) || !approx(got.QuotaCores, tt.want.QuotaCores) ||
				!approx(got.ThrottledSeconds, tt.want.ThrottledSeconds) || got.HasThrottled != tt.want.HasThrottled {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The usage-only read needs nothing but the usage counter: a quota file it
// cannot parse does not matter to it.
func TestReadCgroupCPUUsage(t *testing.T) {
	tests := []struct {
		name    string
		root    string
		want    time.Duration
		wantErr string // substring; empty = success
	}{
		{"v1 combined", cgroupFixture("v1"), 1500 * time.Millisecond, ""},
		{"v1 split", cgroupFixture("v1-split"), 2750 * time.Millisecond, ""},
		{"v1 cpuacct only", cgroupFixture("v1-acct-only"), 42, ""},
		{"v1 cpuacct,cpu", writeTree(t, map[string]string{"cpuacct,cpu/cpuacct.usage": "7\n"}), 7, ""},
		{"v2 limited", cgroupFixture("v2-limited"), 12345678 * time.Microsecond, ""},
		{"v2 root", cgroupFixture("v2-root"), 987654321 * time.Microsecond, ""},
		{"v2 malformed cpu.max is not read", cgroupFixture("v2-bad-max"), time.Microsecond, ""},
		{"v1 malformed usage", cgroupFixture("v1-malformed"), 0, "invalid syntax"},
		{"v2 without usage_usec", cgroupFixture("v2-no-usage"), 0, "no usage_usec"},
		{"empty root", t.TempDir(), 0, "cpuacct.usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadCgroupCPUUsage(tt.root)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if got != 0 {
					t.Errorf("usage %v with an error, want 0", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Errorf("usage = %v, want %v", got, tt.want)
			}
		})
	}
}

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
