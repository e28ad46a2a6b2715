package bundle

import (
	"encoding/binary"
	"errors"
)

// MaxC1 is the number of router interfaces C_2 balances groups over.
const MaxC1 = 6

// DB is C_2's group database (thesis Table 3-1: per packet address, the
// interest bits of the hosts that joined it) and its IP multicast database
// (which C_1 serves each packet address toward the router, the least used
// one when a group first gets interest).
type DB struct {
	interest [Groups]Mask
	c1       [Groups]int8 // 0: none yet; 1..MaxC1
	load     [MaxC1 + 1]int
	C1s      int // router interfaces present (1..MaxC1)
}

// Join records host id's interest in a packet address; first is true when
// the group had no interest before.
func (d *DB) Join(group, id int) (first bool) {
	if group < 0 || group >= Groups {
		return false
	}
	first = d.interest[group] == 0
	d.interest[group] |= Bit(id)
	return first
}

// Drop removes host id's interest; last is true when no host wants the group.
func (d *DB) Drop(group, id int) (last bool) {
	if group < 0 || group >= Groups || d.interest[group] == 0 {
		return false
	}
	d.interest[group] &^= Bit(id)
	return d.interest[group] == 0
}

// Interest is the hosts that want a packet address.
func (d *DB) Interest(group int) Mask {
	if group < 0 || group >= Groups {
		return 0
	}
	return d.interest[group]
}

// Deliver is the interest bits a message goes out with: every host that
// wants its packet address except its sender (reflection prevention; sender
// 0 is the outside).
func (d *DB) Deliver(addr uint16, sender int) Mask {
	return d.interest[Group(addr)] &^ Bit(sender)
}

// C1 is the router interface serving a packet address (0: none).
func (d *DB) C1(group int) int {
	if group < 0 || group >= Groups {
		return 0
	}
	return int(d.c1[group])
}

// Assign gives a packet address to the least used router interface (the
// lowest-numbered among equals) unless it has one; it returns that C_1.
func (d *DB) Assign(group int) int {
	if group < 0 || group >= Groups || d.C1s < 1 {
		return 0
	}
	if c := d.c1[group]; c != 0 {
		return int(c)
	}
	best := 1
	for c := 2; c <= d.C1s && c <= MaxC1; c++ {
		if d.load[c] < d.load[best] {
			best = c
		}
	}
	d.c1[group] = int8(best)
	d.load[best]++
	return best
}

// Release frees a packet address's router interface (no host wants it).
func (d *DB) Release(group int) int {
	if group < 0 || group >= Groups || d.c1[group] == 0 {
		return 0
	}
	c := int(d.c1[group])
	d.c1[group] = 0
	d.load[c]--
	return c
}

// Load is the number of packet addresses a router interface serves.
func (d *DB) Load(c int) int {
	if c < 1 || c > MaxC1 {
		return 0
	}
	return d.load[c]
}

// Control messages travel as ordinary messages at the reserved address
// ControlAddr (odd: priority) and are ControlLen bytes long in all.
const (
	ControlAddr = 0xFFFF
	ControlLen  = 20
)

// Control message types.
const (
	CtlJoin       byte = 1 // host -> C_2, C_2 -> C_1: want a packet address
	CtlDrop       byte = 2 // no longer
	CtlCongestion byte = 3 // C_2 -> hosts: congestion level (0 normal, 1 low priority dropped)
	CtlAck        byte = 4 // acknowledges a join/drop (by sequence number)
	CtlSeq        byte = 5 // reliable mode: last message of a bundle with priority messages, its sequence number
	CtlRAck       byte = 6 // reliable mode: acknowledges a CtlSeq bundle (by its sender's sequence number)
)

// Control is a decoded control message.
type Control struct {
	Type  byte
	Host  uint8
	Group uint16
	Level uint8
	Seq   uint32
}

// ErrControl is a control message of the wrong size or type.
var ErrControl = errors.New("bundle: malformed control message")

// AppendPayload appends the control message's payload (after its address).
func (c Control) AppendPayload(b []byte) []byte {
	b = append(b, c.Type, c.Host)
	b = binary.BigEndian.AppendUint16(b, c.Group)
	b = append(b, c.Level, 0)
	b = binary.BigEndian.AppendUint32(b, c.Seq)
	return append(b, make([]byte, ControlLen-AddrBytes-10)...)
}

// ParseControl decodes a control message's payload.
func ParseControl(p []byte) (Control, error) {
	if len(p) != ControlLen-AddrBytes || p[0] < CtlJoin || p[0] > CtlRAck {
		return Control{}, ErrControl
	}
	return Control{Type: p[0], Host: p[1], Group: binary.BigEndian.Uint16(p[2:]), Level: p[4], Seq: binary.BigEndian.Uint32(p[6:])}, nil
}
