package linkem

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// KernelQueueStats is one line of /proc/net/netfilter/nfnetlink_queue.
type KernelQueueStats struct {
	Queue       uint16
	PortID      uint32
	Waiting     uint64 // packets in the kernel queue waiting for a verdict
	CopyMode    uint8
	CopyRange   uint32
	QueueFull   uint64 // dropped because the queue was full (queue_dropped)
	SocketFull  uint64 // dropped because the netlink socket was full (user_dropped)
	LastID      uint32
	Initialized bool
}

// parseKernelStats finds queue num in the contents of
// /proc/net/netfilter/nfnetlink_queue, whose lines are
// "queue portid waiting copy_mode copy_range queue_dropped user_dropped id_sequence 1".
func parseKernelStats(b []byte, num uint16) (KernelQueueStats, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		var v [8]uint64
		ok := true
		for i := 0; i < 8; i++ {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				ok = false
				break
			}
			v[i] = n
		}
		if !ok || v[0] != uint64(num) {
			continue
		}
		return KernelQueueStats{
			Queue: num, PortID: uint32(v[1]), Waiting: v[2], CopyMode: uint8(v[3]), CopyRange: uint32(v[4]),
			QueueFull: v[5], SocketFull: v[6], LastID: uint32(v[7]), Initialized: true,
		}, nil
	}
	return KernelQueueStats{}, fmt.Errorf("queue %d not found in nfnetlink_queue statistics", num)
}
