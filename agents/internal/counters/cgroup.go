package counters

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
	"time"
)

// CgroupCPU is one reading of a cgroup's CPU files.
type CgroupCPU struct {
	// Usage is the CPU time used, exact (usage_usec or cpuacct.usage).
	Usage time.Duration
	// UsageSeconds is Usage in seconds, converted from the file's own unit.
	UsageSeconds float64
	// QuotaCores is the CFS quota over its period; 0 when unlimited.
	QuotaCores       float64
	ThrottledSeconds float64
	HasThrottled     bool // a throttling counter was found
}

// ReadCgroupCPU reads the cgroup (v1 or v2) mounted at root: usage, quota
// and throttling.
//
// cgroup v2 is recognised by <root>/cgroup.controllers; otherwise the v1
// per-controller directories are searched (cpu,cpuacct as docker mounts
// them on most hosts, separate cpu and cpuacct mounts, or cpuacct,cpu).
//
// The usage counter is required. The quota and throttling files are
// optional: a missing quota file means no limit (0 cores), a missing
// throttling counter leaves HasThrottled false. A file that exists but
// cannot be parsed is always an error.
func ReadCgroupCPU(root string) (CgroupCPU, error) {
	if isCgroupV2(root) {
		return readCgroupV2(root)
	}
	return readCgroupV1(root)
}

// ReadCgroupCPUUsage reads only the usage counter of the cgroup mounted at
// root, found as ReadCgroupCPU finds it; quota and throttling files are
// not looked at. It returns 0 with the error when the counter is unreadable.
func ReadCgroupCPUUsage(root string) (time.Duration, error) {
	var s CgroupCPU
	var err error
	if isCgroupV2(root) {
		s, _, err = readCgroupV2Usage(root)
	} else {
		s, err = readCgroupV1Usage(root)
	}
	if err != nil {
		return 0, err
	}
	return s.Usage, nil
}

func isCgroupV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// readCgroupV2Usage reads usage_usec from cpu.stat and returns the whole
// file's fields too.
func readCgroupV2Usage(root string) (CgroupCPU, map[string]uint64, error) {
	var s CgroupCPU
	statPath := filepath.Join(root, "cpu.stat")
	stat, err := readKeyValues(statPath)
	if err != nil {
		return s, nil, fmt.Errorf("cgroup v2: %w", err)
	}
	usage, ok := stat["usage_usec"]
	if !ok {
		return s, nil, fmt.Errorf("cgroup v2: %s: no usage_usec field", statPath)
	}
	s.Usage = time.Duration(usage) * time.Microsecond
	s.UsageSeconds = float64(usage) / 1e6
	return s, stat, nil
}

// readCgroupV2 reads cpu.stat (usage_usec, throttled_usec) and cpu.max.
func readCgroupV2(root string) (CgroupCPU, error) {
	s, stat, err := readCgroupV2Usage(root)
	if err != nil {
		return s, err
	}
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
// some hosts mount the two controllers separately or as cpuacct,cpu.
var (
	v1AcctDirs = []string{"cpu,cpuacct", "cpuacct", "cpuacct,cpu"}
	v1CPUDirs  = []string{"cpu,cpuacct", "cpu", "cpuacct,cpu"}
)

// readCgroupV1Usage reads cpuacct.usage (ns).
func readCgroupV1Usage(root string) (CgroupCPU, error) {
	var s CgroupCPU
	usagePath, err := firstExisting(root, v1AcctDirs, "cpuacct.usage")
	if err != nil {
		return s, fmt.Errorf("cgroup v1 usage (and no cgroup v2 cgroup.controllers in %s): %w", root, err)
	}
	usage, err := readUint(usagePath)
	if err != nil {
		return s, fmt.Errorf("cgroup v1: %w", err)
	}
	s.Usage = time.Duration(usage)
	s.UsageSeconds = float64(usage) / 1e9
	return s, nil
}

// readCgroupV1 reads cpuacct.usage (ns), cpu.cfs_quota_us/cpu.cfs_period_us
// and cpu.stat throttled_time (ns).
func readCgroupV1(root string) (CgroupCPU, error) {
	s, err := readCgroupV1Usage(root)
	if err != nil {
		return s, err
	}

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
