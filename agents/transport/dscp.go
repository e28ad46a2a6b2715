package transport

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DiffServ marking, the dscp knob of every IP transport. The knob sets
// the socket's IP_TOS (and IPV6_TCLASS on an IPv6 socket, which may also
// carry IPv4-mapped peers) to dscp<<2, leaving the two ECN bits to the
// kernel and quic-go. Conn.SetDSCP marks one connection after the fact;
// where connections share a socket (a udp or quic responder) the mark goes
// in a per-datagram IP_TOS / IPV6_TCLASS control message instead.

var dscpKnob = Knob{Name: "dscp", Kind: KnobDSCP, Help: "DiffServ code point of every packet sent, 0..63 or a name (ef, af11..af43, cs0..cs7, va, le, default): IP_TOS / IPV6_TCLASS = dscp<<2; empty: unmarked (0)"}

// dscpNames are the code points of RFC 2474, 2597, 3246, 5865 and 8622.
var dscpNames = map[string]int{
	"default": 0, "le": 1,
	"cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"va": 44, "ef": 46,
}

// ParseDSCP reads a code point: 0..63, or a name such as "ef" (46) or
// "af41" (34), any case.
func ParseDSCP(s string) (int, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if d, ok := dscpNames[v]; ok {
		return d, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 63 {
		names := make([]string, 0, len(dscpNames))
		for k := range dscpNames {
			names = append(names, k)
		}
		sort.Strings(names)
		return 0, fmt.Errorf("dscp %q: want 0..63 or one of %s", s, strings.Join(names, ", "))
	}
	return n, nil
}

// dscp is the dscp knob: the code point and whether it was given.
func (k knobs) dscp() (int, bool, error) {
	v, ok := k.values[dscpKnob.Name]
	if !ok {
		return 0, false, nil
	}
	d, err := ParseDSCP(v)
	if err != nil {
		return 0, false, knobErr("%s: knob %v", k.transport, err)
	}
	return d, true, nil
}

// isIPv6Socket says whether fd is an AF_INET6 socket.
func isIPv6Socket(fd int) (bool, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false, fmt.Errorf("getsockname: %w", err)
	}
	_, v6 := sa.(*unix.SockaddrInet6)
	return v6, nil
}

// setDSCP marks what socket fd sends: IPV6_TCLASS on an IPv6 socket and
// IP_TOS on every socket (an IPv6 socket uses it for IPv4-mapped peers).
func setDSCP(fd, dscp int) error {
	tos := dscp << 2
	v6, err := isIPv6Socket(fd)
	if err != nil {
		return err
	}
	if v6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos); err != nil {
			return fmt.Errorf("setsockopt IPV6_TCLASS=%d (dscp %d): %w", tos, dscp, err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos); err != nil {
		return fmt.Errorf("setsockopt IP_TOS=%d (dscp %d): %w", tos, dscp, err)
	}
	return nil
}

// setDSCPRaw is setDSCP through a RawConn.
func setDSCPRaw(rc syscall.RawConn, dscp int) error {
	var serr error
	err := rc.Control(func(fd uintptr) { serr = setDSCP(int(fd), dscp) })
	return firstErr(err, serr)
}

// readDSCP reads the code point back: IPV6_TCLASS for an IPv6 socket with
// an IPv6 local address, else IP_TOS.
func readDSCP(fd int) (int, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	level, opt := unix.IPPROTO_IP, unix.IP_TOS
	if s6, ok := sa.(*unix.SockaddrInet6); ok && !netip.AddrFrom16(s6.Addr).Is4In6() {
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	}
	v, err := unix.GetsockoptInt(fd, level, opt)
	if err != nil {
		return 0, err
	}
	return v >> 2, nil
}

// dscpTuning puts the socket's code point in m["dscp"].
func dscpTuning(fd int, m map[string]string) {
	if d, err := readDSCP(fd); err == nil {
		m["dscp"] = strconv.Itoa(d)
	} else {
		m["dscp"] = "unknown (" + err.Error() + ")"
	}
}

// dscpTuningRaw is dscpTuning through a RawConn.
func dscpTuningRaw(rc syscall.RawConn, m map[string]string) {
	_ = rc.Control(func(fd uintptr) { dscpTuning(int(fd), m) })
}

// cmsgHeader reads the control message header at b: total length, level
// and type (struct cmsghdr: a size_t length, then two ints).
func cmsgHeader(b []byte) (n, level, typ int) {
	if unix.SizeofCmsghdr == 16 {
		n = int(binary.NativeEndian.Uint64(b))
	} else {
		n = int(binary.NativeEndian.Uint32(b))
	}
	o := unix.SizeofCmsghdr - 8
	return n, int(int32(binary.NativeEndian.Uint32(b[o:]))), int(int32(binary.NativeEndian.Uint32(b[o+4:])))
}

// appendTOSCmsg appends an IP_TOS (IPv4 peer) or IPV6_TCLASS control
// message of value tos, an int.
func appendTOSCmsg(b []byte, tos int, v4 bool) []byte {
	level, typ := unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	if v4 {
		level, typ = unix.IPPROTO_IP, unix.IP_TOS
	}
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(4))...)
	h := b[start:]
	if unix.SizeofCmsghdr == 16 {
		binary.NativeEndian.PutUint64(h, uint64(unix.CmsgLen(4)))
	} else {
		binary.NativeEndian.PutUint32(h, uint32(unix.CmsgLen(4)))
	}
	o := unix.SizeofCmsghdr - 8
	binary.NativeEndian.PutUint32(h[o:], uint32(level))
	binary.NativeEndian.PutUint32(h[o+4:], uint32(typ))
	binary.NativeEndian.PutUint32(h[unix.CmsgLen(0):], uint32(tos))
	return b
}

// markOOB changes the IP_TOS or IPV6_TCLASS control message of one
// datagram (quic-go's ECN marking) in place to carry tos in its DSCP bits,
// keeping the ECN bits; false when oob has none.
func markOOB(oob []byte, tos int) bool {
	for off := 0; off+unix.SizeofCmsghdr <= len(oob); {
		n, level, typ := cmsgHeader(oob[off:])
		if n < unix.CmsgLen(0) || off+n > len(oob) {
			return false
		}
		data := oob[off+unix.CmsgLen(0) : off+n]
		if (level == unix.IPPROTO_IP && typ == unix.IP_TOS) || (level == unix.IPPROTO_IPV6 && typ == unix.IPV6_TCLASS) {
			switch len(data) {
			case 1:
				data[0] = byte(tos&^3) | data[0]&3
				return true
			case 4:
				v := binary.NativeEndian.Uint32(data)
				binary.NativeEndian.PutUint32(data, uint32(tos&^3)|v&3)
				return true
			}
		}
		off += unix.CmsgSpace(n - unix.CmsgLen(0))
	}
	return false
}

// markedUDPConn is a UDP socket whose datagrams keep their DSCP under
// quic-go: quic-go sends its ECN bits as a per-datagram IP_TOS /
// IPV6_TCLASS control message, which replaces the socket's whole TOS
// byte, so WriteMsgUDP puts the code point back in front of them. The mark
// is per peer (a responder's connections share one socket), with a
// default for the others.
type markedUDPConn struct {
	*net.UDPConn
	mu    sync.RWMutex
	def   int // TOS byte for peers without their own mark; -1: none
	peers map[netip.AddrPort]int
}

func newMarkedUDPConn(u *net.UDPConn, dscp int, set bool) *markedUDPConn {
	m := &markedUDPConn{UDPConn: u, def: -1, peers: map[netip.AddrPort]int{}}
	if set {
		m.def = dscp << 2
	}
	return m
}

func peerKey(a *net.UDPAddr) netip.AddrPort {
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// mark sets peer's code point; a nil peer sets the default (the caller
// sets the socket's own IP_TOS to match).
func (m *markedUDPConn) mark(peer *net.UDPAddr, dscp int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if peer == nil {
		m.def = dscp << 2
		return
	}
	m.peers[peerKey(peer)] = dscp << 2
}

// forget drops peer's own mark.
func (m *markedUDPConn) forget(peer *net.UDPAddr) {
	m.mu.Lock()
	delete(m.peers, peerKey(peer))
	m.mu.Unlock()
}

// tosOf is the TOS byte datagrams to peer carry (-1: none set) and
// whether it is the peer's own rather than the socket's.
func (m *markedUDPConn) tosOf(peer *net.UDPAddr) (int, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if tos, ok := m.peers[peerKey(peer)]; ok {
		return tos, true
	}
	return m.def, false
}

// dscpOf is the code point datagrams to peer carry, -1 when none was set.
func (m *markedUDPConn) dscpOf(peer *net.UDPAddr) int {
	tos, _ := m.tosOf(peer)
	if tos < 0 {
		return -1
	}
	return tos >> 2
}

func (m *markedUDPConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (int, int, error) {
	if tos, own := m.tosOf(addr); tos >= 0 && !markOOB(oob, tos) && own {
		// No ECN message to carry the mark and the socket's TOS is not
		// this peer's: add one (a copy: oob is quic-go's).
		oob = appendTOSCmsg(oob[:len(oob):len(oob)], tos, addr.IP.To4() != nil)
	}
	return m.UDPConn.WriteMsgUDP(b, oob, addr)
}
