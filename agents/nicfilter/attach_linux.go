package nicfilter

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// IfIndex is the index of the interface name in the caller's network
// namespace, asked of the kernel by name (SIOCGIFINDEX). net.InterfaceByName
// lists every interface to find one: attaching to each of N bridge ports that
// way cost O(N^2) (a 128-host lab's filter took 3.5 s to start, 0.5 s at 32).
func IfIndex(name string) (int, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, fmt.Errorf("interface name %q: %w", name, err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

// AttachEgress attaches the filter at the egress of the interface port
// (the bridge port toward the host, in the caller's network namespace)
// with tcx, at the head of the port's tcx chain. The attachment is not
// pinned: it goes when the returned link is closed or the process exits.
//
// On a kernel without tcx (before Linux 6.6) it fails saying so; the
// clsact + cls_bpf fallback is not implemented.
func (f *Filter) AttachEgress(port string) (link.Link, error) {
	index, err := IfIndex(port)
	if err != nil {
		return nil, fmt.Errorf("bridge port %s: %w", port, err)
	}
	l, err := link.AttachTCX(link.TCXOptions{
		Interface: index,
		Program:   f.Program,
		Attach:    ebpf.AttachTCXEgress,
		Anchor:    link.Head(),
	})
	if errors.Is(err, ebpf.ErrNotSupported) {
		return nil, fmt.Errorf("attaching to %s: this kernel has no tcx (Linux 6.6+), and the clsact fallback is not implemented: %w", port, err)
	}
	if err != nil {
		return nil, fmt.Errorf("attaching to the egress of %s (tcx): %w", port, err)
	}
	return l, nil
}
