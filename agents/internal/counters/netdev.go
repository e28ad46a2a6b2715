package counters

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// ReadNetDev parses <proc>/net/dev (proc being /proc, /proc/thread-self, ...)
// into counters keyed by interface name. procfs panics on a truncated line;
// callers that must survive malformed files recover.
func ReadNetDev(proc string) (procfs.NetDev, error) {
	fs, err := procfs.NewFS(proc)
	if err != nil {
		return nil, fmt.Errorf("opening procfs: %w", err)
	}
	devs, err := fs.NetDev()
	if err != nil {
		return nil, fmt.Errorf("reading net/dev: %w", err)
	}
	return devs, nil
}
