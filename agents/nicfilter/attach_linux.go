package nicfilter

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// AttachEgress attaches the filter at the egress of the interface port
// (the bridge port toward the host, in the caller's network namespace)
// with tcx, at the head of the port's tcx chain. The attachment is not
// pinned: it goes when the returned link is closed or the process exits.
//
// On a kernel without tcx (before Linux 6.6) it fails saying so; the
// clsact + cls_bpf fallback is not implemented.
func (f *Filter) AttachEgress(port string) (link.Link, error) {
	ifi, err := net.InterfaceByName(port)
	if err != nil {
		return nil, fmt.Errorf("bridge port %s: %w", port, err)
	}
	l, err := link.AttachTCX(link.TCXOptions{
		Interface: ifi.Index,
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
