package dishost

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CgroupCPU returns the CPU time used so far by this process's cgroup (the
// container), from cgroup v2 cpu.stat or cgroup v1 cpuacct.usage under root
// (normally /sys/fs/cgroup), and whether it could be read.
func CgroupCPU(root string) (time.Duration, bool) {
	if b, err := os.ReadFile(root + "/cpu.stat"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
					return time.Duration(us) * time.Microsecond, true
				}
			}
		}
	}
	for _, d := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
		if b, err := os.ReadFile(root + "/" + d + "/cpuacct.usage"); err == nil {
			if ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return time.Duration(ns), true
			}
		}
	}
	return 0, false
}
