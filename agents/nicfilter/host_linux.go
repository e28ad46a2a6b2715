package nicfilter

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"protolab/agents/internal/netns"
)

// Host is the interface of a lab host whose receive filter the model
// mirrors: the address, flags and multicast list its stack programs into
// its NIC (through ndo_set_rx_mode), read from outside its namespace.
type Host struct {
	PID    int
	IfName string
	sock   int // a datagram socket in the host's network namespace, for ioctls
}

// OpenHost checks that process pid exists and has an interface ifname in
// its network namespace.
func OpenHost(pid int, ifname string) (*Host, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: want a positive process id", pid)
	}
	if ifname == "" || len(ifname) >= unix.IFNAMSIZ || strings.ContainsAny(ifname, "/ \t\n") {
		return nil, fmt.Errorf("interface name %q is not a valid name", ifname)
	}
	h := &Host{PID: pid, IfName: ifname, sock: -1}
	err := netns.Run(fmt.Sprintf("/proc/%d/ns/net", pid), func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		h.sock = fd
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("host pid %d: %w", pid, err)
	}
	if _, _, err := h.ioctl(unix.SIOCGIFFLAGS); err != nil {
		h.Close()
		return nil, fmt.Errorf("host pid %d: %w", pid, err)
	}
	return h, nil
}

// Close closes the host's socket.
func (h *Host) Close() {
	if h.sock >= 0 {
		unix.Close(h.sock)
		h.sock = -1
	}
}

// ifreqHW is struct ifreq with the union as a struct sockaddr.
type ifreqHW struct {
	Name   [unix.IFNAMSIZ]byte
	Family uint16
	Data   [22]byte
}

// ioctl runs SIOCGIFFLAGS or SIOCGIFHWADDR on the interface and returns the
// union's first 2 bytes (flags, or the address family) and the rest.
func (h *Host) ioctl(req uint) (uint16, [22]byte, error) {
	var r ifreqHW
	copy(r.Name[:], h.IfName)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(h.sock), uintptr(req), uintptr(unsafe.Pointer(&r)))
	if errno != 0 {
		return 0, r.Data, fmt.Errorf("interface %s: %w", h.IfName, errno)
	}
	return r.Family, r.Data, nil
}

// Read returns the interface's address, IFF_ALLMULTI, IFF_PROMISC and its
// link-layer multicast list (/proc/PID/net/dev_mcast) in a State of the
// given mode.
func (h *Host) Read(mode Mode) (State, error) {
	s := State{Mode: mode}
	flags, _, err := h.ioctl(unix.SIOCGIFFLAGS)
	if err != nil {
		return s, err
	}
	s.AllMulti = flags&unix.IFF_ALLMULTI != 0
	s.Promisc = flags&unix.IFF_PROMISC != 0
	family, data, err := h.ioctl(unix.SIOCGIFHWADDR)
	if err != nil {
		return s, err
	}
	if family != unix.ARPHRD_ETHER {
		return s, fmt.Errorf("interface %s: hardware type %d is not Ethernet", h.IfName, family)
	}
	copy(s.MAC[:], data[:6])
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/dev_mcast", h.PID))
	if err != nil {
		return s, err
	}
	defer f.Close()
	s.Joined, err = ParseDevMcast(f, h.IfName)
	return s, err
}

// ParseDevMcast returns the 6-byte addresses of interface ifname in a
// /proc/net/dev_mcast listing ("ifindex name users global_use hexaddr"
// per line, net/core/dev_addr_lists.c).
func ParseDevMcast(r io.Reader, ifname string) ([][6]byte, error) {
	var out [][6]byte
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 5 {
			return nil, fmt.Errorf("dev_mcast line %d: %d fields, want 5: %q", n, len(fields), sc.Text())
		}
		if _, err := strconv.Atoi(fields[0]); err != nil {
			return nil, fmt.Errorf("dev_mcast line %d: ifindex %q: %w", n, fields[0], err)
		}
		if fields[1] != ifname {
			continue
		}
		b, err := hex.DecodeString(fields[4])
		if err != nil {
			return nil, fmt.Errorf("dev_mcast line %d: address %q: %w", n, fields[4], err)
		}
		if len(b) != 6 {
			continue // not an Ethernet address
		}
		out = append(out, [6]byte(b))
	}
	return out, sc.Err()
}
