package dishost

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"protolab/agents/dis"
)

// Defaults of the DIS standard and of the thesis.
const (
	HeartbeatInterval = 5 * time.Second  // Entity State heartbeat (IEEE 1278.1)
	EntityTimeout     = 12 * time.Second // entity removed when silent this long
	ReceiveBufferSize = dis.MaxPDUSize   // 8192: the largest DIS PDU
	DefaultPort       = 3000             // DIS's customary UDP port
	MinSize           = dis.MessageAddressSize + dis.CollisionSize
	MaxSize           = ReceiveBufferSize
)

// DefaultBase is the first multicast group (packet address 0).
var DefaultBase = netip.MustParseAddr("239.192.0.0")

// Mix is the share of each PDU type among generated messages.
type Mix map[dis.PDUType]float64

// DefaultMix: Entity State dominates (over 90 % of real DIS traffic).
func DefaultMix() Mix {
	return Mix{dis.TypeEntityState: 0.92, dis.TypeFire: 0.03, dis.TypeDetonation: 0.03, dis.TypeCollision: 0.02}
}

var mixNames = map[string]dis.PDUType{
	"entity_state": dis.TypeEntityState, "fire": dis.TypeFire, "detonation": dis.TypeDetonation,
	"collision": dis.TypeCollision, "service_request": dis.TypeServiceRequest,
	"resupply_offer": dis.TypeResupplyOffer, "resupply_received": dis.TypeResupplyReceived,
	"resupply_cancel": dis.TypeResupplyCancel, "repair_complete": dis.TypeRepairComplete,
	"repair_response": dis.TypeRepairResponse,
}

// ParseMix reads "entity_state=90,fire=5,detonation=5" (weights, normalised).
func ParseMix(s string) (Mix, error) {
	m := Mix{}
	total := 0.0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("mix %q: %q is not type=weight", s, part)
		}
		t, ok := mixNames[strings.TrimSpace(name)]
		if !ok {
			names := make([]string, 0, len(mixNames))
			for n := range mixNames {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("mix %q: unknown PDU type %q (one of %s)", s, name, strings.Join(names, ", "))
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("mix %q: weight of %s must be a number >= 0", s, name)
		}
		m[t] += v
		total += v
	}
	if total <= 0 {
		return nil, fmt.Errorf("mix %q: weights sum to zero", s)
	}
	for t := range m {
		m[t] /= total
	}
	return m, nil
}

// Plan is the address plan of an exercise.
type Plan struct {
	Groups   int        // packet addresses in use: 0..Groups-1
	PerGroup int        // message addresses per packet address (thesis: 32)
	Base     netip.Addr // group of packet address 0
}

// Validate checks that the plan fits the 16-bit message address space and
// the multicast range.
func (p Plan) Validate() error {
	if p.Groups < 1 {
		return errors.New("groups must be at least 1")
	}
	if p.PerGroup < 1 || p.PerGroup > 65536 {
		return errors.New("messages per packet address must be 1..65536")
	}
	if p.Groups*p.PerGroup > 65536 {
		return fmt.Errorf("%d groups x %d messages per packet address exceed the 65536 two-byte message addresses"+
			" (use at most %d messages per packet address)", p.Groups, p.PerGroup, 65536/p.Groups)
	}
	if !p.Base.Is4() || !p.Base.IsMulticast() {
		return fmt.Errorf("base %v is not an IPv4 multicast address", p.Base)
	}
	last := p.Base.As4()
	v := uint32(last[0])<<24 | uint32(last[1])<<16 | uint32(last[2])<<8 | uint32(last[3])
	if v+uint32(p.Groups-1) > 0xefffffff {
		return fmt.Errorf("%d groups from %v run past 239.255.255.255", p.Groups, p.Base)
	}
	return nil
}

// MessageAddress of a message of entity e for group g.
func (p Plan) MessageAddress(g, e int) dis.MessageAddress {
	return dis.MessageAddress(g*p.PerGroup + e%p.PerGroup)
}

// PacketAddress returns the packet address (group index) of message address a.
func (p Plan) PacketAddress(a dis.MessageAddress) int { return int(a) / p.PerGroup }

// Group is the multicast address of packet address g.
func (p Plan) Group(g int) netip.Addr {
	b := p.Base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(g)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Joined is the number of groups a receiver with the given interest share
// joins: round(share x groups), at least 1.
func Joined(groups int, share float64) int {
	k := int(share*float64(groups) + 0.5)
	if k < 1 {
		k = 1
	}
	if k > groups {
		k = groups
	}
	return k
}
