// Package converter is the thesis's message-bundle converter (Bobo 1997,
// sec. 3.4) and the load around it, over real sockets:
//
//   - C_2 (RunC2), the central converter: receives the hosts' bundles and the
//     router interfaces' bundles, keeps the group database (package bundle),
//     and every interval broadcasts one bundle to the hosts with each message's
//     address replaced by the interest bits of the hosts that want it (its
//     sender's bit cleared); it gives every packet address a host joins to the
//     least used C_1, tracks the utilisation of its link to the hosts and
//     drops low-priority messages above 80 % of its capacity until it falls
//     below 40 % (sec. 3.4.3), telling the hosts the congestion level.
//   - C_1 (RunC1), the router interface: joins the packet addresses C_2 gives
//     it with real IGMP, bundles the one-message-per-packet IP multicast from
//     the router every interval toward C_2, and sends what C_2 forwards to the
//     outside as one message per packet.
//   - H (RunH), the host interface with a simulation host's load: bundles the
//     host's messages every interval to C_2, joins its groups with control
//     messages (acknowledged), keeps the messages whose interest bit is its own.
//   - the baseline host (RunHost): the same load, one message per IP multicast
//     packet, real IGMP joins; and the WAN source/sink (RunWAN) at the router.
//
// Every message carries a data header after its 2-byte address: kind (0),
// sender host id (0 = the outside), sequence number and the send time in
// Unix nanoseconds, so every receiver measures one-way delay (all containers
// share the host clock), loss against what was addressed to it, and
// reflection (its own messages coming back).
package converter

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/netip"
	"time"

	"protolab/agents/bundle"
)

// Data header after the message address.
const (
	HeaderLen    = 14 // kind 1, sender 1, sequence 4, send time 8
	MinSize      = bundle.AddrBytes + HeaderLen
	kindData     = 0
	kindPriority = 0x80 // a data message sent with the priority flag (the hosts never see its address)
)

// isData tells a data message's payload from a control message's.
func isData(p []byte) bool { return len(p) > 0 && (p[0] == kindData || p[0] == kindPriority) }

// Plan is the exercise's addressing: packet addresses 0..WANGroups-1 carry
// the outside's messages (every host wants them), then one packet address per
// set of To hosts, which only those hosts join: a host message "to two random
// other hosts" goes to the packet address of that pair.
type Plan struct {
	Hosts, To, WANGroups int
	Base                 netip.Addr
	subsets              []bundle.Mask
	index                map[bundle.Mask]int
}

// NewPlan checks that the groups fit the 2-byte address space (one packet
// address is reserved for control messages).
func NewPlan(hosts, to, wanGroups int, base netip.Addr) (*Plan, error) {
	switch {
	case hosts < 1 || hosts > 64:
		return nil, fmt.Errorf("--hosts %d: 1..64 (the widest bundle mask)", hosts)
	case to < 1 || to >= hosts && hosts > 1:
		return nil, fmt.Errorf("--to %d: 1..hosts-1 (%d)", to, hosts-1)
	case wanGroups < 1:
		return nil, fmt.Errorf("--wan-groups %d: at least 1", wanGroups)
	case !base.Is4() || !base.IsMulticast():
		return nil, fmt.Errorf("--base %v: an IPv4 multicast address", base)
	}
	p := &Plan{Hosts: hosts, To: to, WANGroups: wanGroups, Base: base, index: map[bundle.Mask]int{}}
	var rec func(start int, m bundle.Mask, k int) error
	rec = func(start int, m bundle.Mask, k int) error {
		if k == 0 {
			if wanGroups+len(p.subsets) >= bundle.Groups-1 {
				return fmt.Errorf("%d hosts choose %d: more packet addresses than the 2-byte address space holds", hosts, to)
			}
			p.index[m] = len(p.subsets)
			p.subsets = append(p.subsets, m)
			return nil
		}
		for id := start; id <= hosts; id++ {
			if err := rec(id+1, m|bundle.Bit(id), k-1); err != nil {
				return err
			}
		}
		return nil
	}
	if hosts > 1 {
		if err := rec(1, 0, to); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Groups is the number of packet addresses in use.
func (p *Plan) Groups() int { return p.WANGroups + len(p.subsets) }

// GroupsOf is every packet address host id wants: the outside's and its sets'.
func (p *Plan) GroupsOf(id int) []int {
	out := make([]int, 0, p.WANGroups+len(p.subsets))
	for g := 0; g < p.WANGroups; g++ {
		out = append(out, g)
	}
	for i, m := range p.subsets {
		if m.Has(id) {
			out = append(out, p.WANGroups+i)
		}
	}
	return out
}

// IP is the multicast group of a packet address.
func (p *Plan) IP(group int) netip.Addr {
	b := p.Base.As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(group)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// GroupOfIP is the packet address of a multicast IP (-1 outside the plan).
func (p *Plan) GroupOfIP(ip netip.Addr) int {
	if !ip.Is4() {
		return -1
	}
	a, b := p.Base.As4(), ip.As4()
	d := int64(binary.BigEndian.Uint32(b[:])) - int64(binary.BigEndian.Uint32(a[:]))
	if d < 0 || d >= int64(p.Groups()) {
		return -1
	}
	return int(d)
}

// Pick chooses To random hosts other than the sender and returns their
// packet address and ids.
func (p *Plan) Pick(rng *rand.Rand, sender int, ids []int) (int, []int) {
	ids = ids[:0]
	for id := 1; id <= p.Hosts; id++ {
		if id != sender {
			ids = append(ids, id)
		}
	}
	for i := 0; i < p.To; i++ {
		j := i + rng.Intn(len(ids)-i)
		ids[i], ids[j] = ids[j], ids[i]
	}
	ids = ids[:p.To]
	var m bundle.Mask
	for _, id := range ids {
		m |= bundle.Bit(id)
	}
	return p.WANGroups + p.index[m], ids
}

// Addr is a message address in a packet address; odd addresses are priority.
func Addr(group int, seq uint32, priority bool) uint16 {
	a := uint16(group*bundle.PerGroup) | uint16(seq%16)<<1
	if priority {
		a |= 1
	}
	return a
}

// PutHeader writes the data header and padding: the message payload of a
// size-byte message (address excluded).
func PutHeader(b []byte, sender int, seq uint32, now time.Time, priority bool) {
	b[0] = kindData
	if priority {
		b[0] = kindPriority
	}
	b[1] = byte(sender)
	binary.BigEndian.PutUint32(b[2:], seq)
	binary.BigEndian.PutUint64(b[6:], uint64(now.UnixNano()))
	clear(b[HeaderLen:])
}

// Header reads a data header: ok is false for control messages or short
// payloads.
func Header(p []byte) (sender int, seq uint32, sent time.Time, priority, ok bool) {
	if len(p) < HeaderLen || !isData(p) {
		return 0, 0, time.Time{}, false, false
	}
	return int(p[1]), binary.BigEndian.Uint32(p[2:]), time.Unix(0, int64(binary.BigEndian.Uint64(p[6:]))), p[0] == kindPriority, true
}
