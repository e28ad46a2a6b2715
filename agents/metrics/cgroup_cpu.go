package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	Register("cgroup_cpu", newCgroupCPUCollector)
}

// cgroupCPUCollector reports the CPU used by the cgroup mounted at root,
// which inside a container is the container itself.
//
// cgroup v2 is recognised by <root>/cgroup.controllers; otherwise the v1
// per-controller directories are searched (cpu,cpuacct as docker mounts
// them on most hosts, or separate cpu and cpuacct mounts).
//
// The usage counter is required: if it cannot be read the collector fails.
// The quota and throttling files are optional: a missing quota file means no
// CFS bandwidth limit applies (exported as 0 cores), a missing throttling
// counter is simply not exported. A file that exists but cannot be parsed
// is always an error.
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

// cpuSample is one reading of the cgroup CPU files.
type cpuSample struct {
	UsageSeconds     float64
	QuotaCores       float64
	ThrottledSeconds float64
	HasThrottled     bool
}

func (c *cgroupCPUCollector) Update(ch chan<- prometheus.Metric) error {
	s, err := readCgroupCPU(c.root)
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

// readCgroupCPU reads the cgroup (v1 or v2) mounted at root.
func readCgroupCPU(root string) (cpuSample, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return readCgroupV2(root)
	}
	return readCgroupV1(root)
}

// readCgroupV2 reads cpu.stat (usage_usec, throttled_usec) and cpu.max.
func readCgroupV2(root string) (cpuSample, error) {
	var s cpuSample
	statPath := filepath.Join(root, "cpu.stat")
	stat, err := readKeyValues(statPath)
	if err != nil {
		return s, fmt.Errorf("cgroup v2: %w", err)
	}
	usage, ok := stat["usage_usec"]
	if !ok {
		return s, fmt.Errorf("cgroup v2: %s: no usage_usec field", statPath)
	}
	s.UsageSeconds = float64(usage) / 1e6
	if t, ok := stat["throttled_usec"]; ok {
		s.ThrottledSeconds = float64(t) / 1e6
		s.HasThrottled = true
	}

	// cpu.max is "$MAX $PERIOD", MAX being "max" when unlimited. It is
	// absent in the root cgroup and where the cpu controller is not
	// enabled: no limit applies at this level then.
	maxPath := filepath.Join(root, "cpu.max")
	raw, err := os.ReadFile(maxPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("cgroup v2: %w", err)
	}
	s.QuotaCores, err = parseCPUMax(string(raw))
	if err != nil {
		return s, fmt.Errorf("cgroup v2: %s: %w", maxPath, err)
	}
	return s, nil
}

// parseCPUMax parses the cgroup v2 cpu.max format into cores (0 = no limit).
func parseCPUMax(raw string) (float64, error) {
	fields := strings.Fields(raw)
	if len(fields) == 0 || len(fields) > 2 {
		return 0, fmt.Errorf("want \"$MAX $PERIOD\", got %q", strings.TrimSpace(raw))
	}
	if fields[0] == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("quota: %w", err)
	}
	period := uint64(100000) // kernel default when the period is omitted
	if len(fields) == 2 {
		if period, err = strconv.ParseUint(fields[1], 10, 64); err != nil {
			return 0, fmt.Errorf("period: %w", err)
		}
	}
	if period == 0 {
		return 0, errors.New("period is 0")
	}
	return float64(quota) / float64(period), nil
}

// v1 controller directories, in the order they are tried. Docker usually
// mounts a combined cpu,cpuacct hierarchy (with cpu and cpuacct symlinks);
// some hosts mount the two controllers separately.
var (
	v1AcctDirs = []string{"cpu,cpuacct", "cpuacct"}
	v1CPUDirs  = []string{"cpu,cpuacct", "cpu"}
)

// readCgroupV1 reads cpuacct.usage (ns), cpu.cfs_quota_us/cpu.cfs_period_us
// and cpu.stat throttled_time (ns).
func readCgroupV1(root string) (cpuSample, error) {
	var s cpuSample

	usagePath, err := firstExisting(root, v1AcctDirs, "cpuacct.usage")
	if err != nil {
		return s, fmt.Errorf("cgroup v1 usage (and no cgroup v2 cgroup.controllers in %s): %w", root, err)
	}
	usage, err := readUint(usagePath)
	if err != nil {
		return s, fmt.Errorf("cgroup v1: %w", err)
	}
	s.UsageSeconds = float64(usage) / 1e9

	if quotaPath, err := firstExisting(root, v1CPUDirs, "cpu.cfs_quota_us"); err == nil {
		quota, err := readInt(quotaPath)
		if err != nil {
			return s, fmt.Errorf("cgroup v1: %w", err)
		}
		if quota > 0 { // -1 means no limit
			periodPath := filepath.Join(filepath.Dir(quotaPath), "cpu.cfs_period_us")
			period, err := readInt(periodPath)
			if err != nil {
				return s, fmt.Errorf("cgroup v1: %w", err)
			}
			if period <= 0 {
				return s, fmt.Errorf("cgroup v1: %s: period %d is not positive", periodPath, period)
			}
			s.QuotaCores = float64(quota) / float64(period)
		}
	}

	if statPath, err := firstExisting(root, v1CPUDirs, "cpu.stat"); err == nil {
		stat, err := readKeyValues(statPath)
		if err != nil {
			return s, fmt.Errorf("cgroup v1: %w", err)
		}
		if t, ok := stat["throttled_time"]; ok {
			s.ThrottledSeconds = float64(t) / 1e9
			s.HasThrottled = true
		}
	}
	return s, nil
}

// firstExisting returns root/dir/name for the first dir where that file
// exists, or an error naming every path tried.
func firstExisting(root string, dirs []string, name string) (string, error) {
	tried := make([]string, 0, len(dirs))
	for _, d := range dirs {
		p := filepath.Join(root, d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("none of %s: %w", strings.Join(tried, ", "), fs.ErrNotExist)
}

func readUint(path string) (uint64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func readInt(path string) (int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readKeyValues parses a flat-keyed cgroup file ("key value" per line) such
// as cpu.stat.
func readKeyValues(path string) (map[string]uint64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: field %s: %w", path, fields[0], err)
		}
		out[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
