package dishost

import (
	"time"

	"protolab/agents/internal/counters"
)

// CgroupCPU returns the CPU time used so far by the cgroup mounted at root
// (normally /sys/fs/cgroup: the container), and whether it could be read.
func CgroupCPU(root string) (time.Duration, bool) {
	d, err := counters.ReadCgroupCPUUsage(root)
	return d, err == nil
}
