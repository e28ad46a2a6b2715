// Package netnstestbed is a throw-away pair of network namespaces joined by
// a veth pair, for the link emulator's root tests and its benchmark. It
// never touches the root namespace.
package netnstestbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"protolab/agents/internal/netns"
)

// Testbed is namespace A (plabt-P-PID-N-a, interface plt-...a,
// 192.0.2.1/24) sending to B (plabt-P-PID-N-b, interface plt-...b,
// 192.0.2.2/24), whose mangle PREROUTING rule queues the UDP datagrams A
// sends to B (QueueRule). Everything it creates carries the plabt-/plt-
// prefixes and goes away with Close (deleting a namespace deletes its veth
// end and its iptables rules).
type Testbed struct {
	Tag      string
	NSA, NSB string // namespace names
	IfA, IfB string // interface names
	AddrA    net.IP
	AddrB    net.IP
	Addr6A   net.IP // 2001:db8::1
	Addr6B   net.IP // 2001:db8::2
	Queue    uint16
	created  []string
	rule     []string
}

var testbedSeq atomic.Uint32

// New creates the namespaces and the veth pair. prefix (at most 3
// characters) helps telling test beds apart; the process id and a counter
// make the names unique.
func New(prefix string, queue uint16) (*Testbed, error) {
	if len(prefix) > 3 {
		prefix = prefix[:3]
	}
	pid, seq := os.Getpid(), testbedSeq.Add(1)
	ifTag := fmt.Sprintf("%s%x%x", prefix, pid&0xfffff, seq)
	if len(ifTag) > 10 {
		ifTag = ifTag[len(ifTag)-10:]
	}
	nsTag := fmt.Sprintf("%s-%d-%d", prefix, pid, seq)
	tb := &Testbed{
		Tag: nsTag, NSA: "plabt-" + nsTag + "-a", NSB: "plabt-" + nsTag + "-b",
		IfA: "plt-" + ifTag + "a", IfB: "plt-" + ifTag + "b",
		AddrA: net.IPv4(192, 0, 2, 1).To4(), AddrB: net.IPv4(192, 0, 2, 2).To4(), Queue: queue,
		Addr6A: net.ParseIP("2001:db8::1"), Addr6B: net.ParseIP("2001:db8::2"),
	}
	steps := [][]string{
		{"ip", "netns", "add", tb.NSA},
		{"ip", "netns", "add", tb.NSB},
		{"ip", "link", "add", tb.IfA, "netns", tb.NSA, "type", "veth", "peer", "name", tb.IfB, "netns", tb.NSB},
		{"ip", "-n", tb.NSA, "addr", "add", "192.0.2.1/24", "dev", tb.IfA},
		{"ip", "-n", tb.NSB, "addr", "add", "192.0.2.2/24", "dev", tb.IfB},
		{"ip", "-n", tb.NSA, "link", "set", tb.IfA, "up"},
		{"ip", "-n", tb.NSB, "link", "set", tb.IfB, "up"},
		{"ip", "-n", tb.NSA, "addr", "add", "2001:db8::1/64", "dev", tb.IfA, "nodad"},
		{"ip", "-n", tb.NSB, "addr", "add", "2001:db8::2/64", "dev", tb.IfB, "nodad"},
		{"ip", "-n", tb.NSA, "link", "set", "lo", "up"},
		{"ip", "-n", tb.NSB, "link", "set", "lo", "up"},
	}
	for i, s := range steps {
		if err := runCmd(s...); err != nil {
			tb.Close()
			return nil, err
		}
		if i < 2 {
			tb.created = append(tb.created, s[3])
		}
	}
	// Static neighbours: no ARP or neighbour solicitation can delay the
	// first measurements.
	macA, errA := ifaceMAC(tb.NSPath(tb.NSA), tb.IfA)
	macB, errB := ifaceMAC(tb.NSPath(tb.NSB), tb.IfB)
	if err := errors.Join(errA, errB); err != nil {
		tb.Close()
		return nil, err
	}
	for _, s := range [][]string{
		{"ip", "-n", tb.NSA, "neigh", "replace", "192.0.2.2", "lladdr", macB, "dev", tb.IfA, "nud", "permanent"},
		{"ip", "-n", tb.NSB, "neigh", "replace", "192.0.2.1", "lladdr", macA, "dev", tb.IfB, "nud", "permanent"},
		{"ip", "-n", tb.NSA, "neigh", "replace", "2001:db8::2", "lladdr", macB, "dev", tb.IfA, "nud", "permanent"},
		{"ip", "-n", tb.NSB, "neigh", "replace", "2001:db8::1", "lladdr", macA, "dev", tb.IfB, "nud", "permanent"},
	} {
		if err := runCmd(s...); err != nil {
			tb.Close()
			return nil, err
		}
	}
	return tb, nil
}

func ifaceMAC(ns, name string) (string, error) {
	var mac string
	err := netns.Run(ns, func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		mac = ifi.HardwareAddr.String()
		return nil
	})
	return mac, err
}

func runCmd(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// SetMTU sets the MTU of both veth ends.
func (tb *Testbed) SetMTU(mtu int) error {
	return errors.Join(
		runCmd("ip", "-n", tb.NSA, "link", "set", tb.IfA, "mtu", fmt.Sprint(mtu)),
		runCmd("ip", "-n", tb.NSB, "link", "set", tb.IfB, "mtu", fmt.Sprint(mtu)))
}

// NSPath is the path of a namespace of the bed, for netns.Run and --netns.
func (tb *Testbed) NSPath(name string) string { return "/run/netns/" + name }

// QueueRule is the iptables rule (after "-t mangle -A") that queues the
// tests' own packets as they arrive at B: UDP from AddrA to AddrB on B's
// veth. What the kernels send by themselves (neighbour discovery, DAD,
// MLD and IGMP reports, router solicitations: ICMP or IGMP, mostly
// link-local or multicast) is left alone, so linkem's counters count the
// test's datagrams and nothing else, however soon after the links came up
// a test runs.
func (tb *Testbed) QueueRule() []string {
	return tb.queueRule(tb.AddrA, tb.AddrB)
}

// QueueRule6 is QueueRule for IPv6 (ip6tables, Addr6A to Addr6B).
func (tb *Testbed) QueueRule6() []string {
	return tb.queueRule(tb.Addr6A, tb.Addr6B)
}

func (tb *Testbed) queueRule(src, dst net.IP) []string {
	return []string{"PREROUTING", "-i", tb.IfB, "-p", "udp", "-s", src.String(), "-d", dst.String(),
		"-j", "NFQUEUE", "--queue-num", fmt.Sprint(tb.Queue), "--queue-bypass"}
}

// InstallQueueRule adds the NFQUEUE rule in B.
func (tb *Testbed) InstallQueueRule() error {
	if tb.rule != nil {
		return nil
	}
	if err := runCmd(append([]string{"ip", "netns", "exec", tb.NSB, "iptables", "-w", "5", "-t", "mangle", "-A"}, tb.QueueRule()...)...); err != nil {
		return err
	}
	tb.rule = tb.QueueRule()
	return nil
}

// InstallQueueRule6 adds the same rule for IPv6 with ip6tables.
func (tb *Testbed) InstallQueueRule6() error {
	return runCmd(append([]string{"ip", "netns", "exec", tb.NSB, "ip6tables", "-w", "5", "-t", "mangle", "-A"}, tb.QueueRule6()...)...)
}

// RemoveQueueRule deletes the NFQUEUE rule from B.
func (tb *Testbed) RemoveQueueRule() error {
	if tb.rule == nil {
		return nil
	}
	err := runCmd(append([]string{"ip", "netns", "exec", tb.NSB, "iptables", "-w", "5", "-t", "mangle", "-D"}, tb.rule...)...)
	tb.rule = nil
	return err
}

// Close deletes the namespaces (and with them the veth pair and rules).
func (tb *Testbed) Close() error {
	var errs []error
	for _, ns := range tb.created {
		if err := runCmd("ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	tb.created = nil
	return errors.Join(errs...)
}

// ListenUDP opens a UDP socket in namespace ns bound to addr.
func (tb *Testbed) ListenUDP(ns string, addr *net.UDPAddr) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := netns.Run(tb.NSPath(ns), func() error {
		var err error
		c, err = net.ListenUDP("udp", addr)
		return err
	})
	return c, err
}

// HTTPClient is a client whose connections are made from namespace ns
// (to reach a server listening on that namespace's loopback).
func (tb *Testbed) HTTPClient(ns string) *http.Client {
	path := tb.NSPath(ns)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := netns.Run(path, func() error {
				var err error
				c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
		DisableKeepAlives: true,
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// RemoveStale deletes the namespaces of test beds whose process
// is gone (one killed before its cleanup ran): plabt-PREFIX-PID-SEQ-a/b
// with PID not running. Namespaces of live processes are left alone.
func RemoveStale() {
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		f := strings.Split(e.Name(), "-")
		if len(f) != 5 || f[0] != "plabt" || (f[4] != "a" && f[4] != "b") {
			continue
		}
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || err == unix.EPERM {
			continue // alive
		}
		_ = runCmd("ip", "netns", "del", e.Name())
	}
}

// NFQueueUsable tells why root integration tests and the benchmark cannot
// run here, or nil if they can: it needs root, the ip and iptables
// commands, and iptables' NFQUEUE target, probed in a throw-away namespace.
func NFQueueUsable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: creating namespaces and NFQUEUE rules needs root")
	}
	for _, c := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%s command not found: %w", c, err)
		}
	}
	ns := fmt.Sprintf("plabt-probe%x", os.Getpid()&0xfffff)
	if err := runCmd("ip", "netns", "add", ns); err != nil {
		return fmt.Errorf("cannot create a network namespace: %w", err)
	}
	defer runCmd("ip", "netns", "del", ns)
	if err := runCmd("ip", "netns", "exec", ns, "iptables", "-w", "5", "-t", "mangle", "-A", "PREROUTING", "-i", "lo",
		"-j", "NFQUEUE", "--queue-num", "1", "--queue-bypass"); err != nil {
		return fmt.Errorf("iptables -j NFQUEUE is unusable: %w", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return fmt.Errorf("no netfilter netlink socket: %w", err)
	}
	unix.Close(fd)
	return nil
}
