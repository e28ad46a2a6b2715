package nicfilter

import (
	"fmt"
	"net"
)

// Bins is the number of bins of the logical address filter.
const Bins = 64

// poly is the Ethernet CRC-32 polynomial 0x04C11DB7 bit-reversed, for the
// LSB-first (reflected) computation the controller does as bits arrive.
const poly = 0xEDB88320

// crcTable is the byte-at-a-time table of the reflected CRC: entry i is the
// CRC register after shifting byte i through a zero register.
var crcTable = makeTable()

func makeTable() (t [256]uint32) {
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}

// Table is the 256-entry table the BPF program's CRC uses (the same as
// hash/crc32's IEEE table).
func Table() [256]uint32 { return crcTable }

// CRC is the CRC register after the 6 bytes of a destination address,
// Linux's ether_crc_le(6, addr): preset to all ones, LSB first, no final
// complement (so it is the complement of hash/crc32.ChecksumIEEE).
func CRC(mac [6]byte) uint32 {
	c := uint32(0xFFFFFFFF)
	for _, b := range mac {
		c = crcTable[byte(c)^b] ^ c>>8
	}
	return c
}

// Bin is the bin (0..63) of the AMD LANCE / PCnet logical address filter
// (LADRF) that a multicast destination address selects: the 6 most
// significant bits of the CRC register. The bin number is the bit number
// in the 64-bit filter (LADRF[63:0]). Linux's pcnet32_load_multicast
// (drivers/net/ethernet/amd/pcnet32.c, "taken from the sunlance driver,
// which it took from the depca driver"; lance.c does the same):
//
//	crc = ether_crc_le(6, ha->addr);
//	crc = crc >> 26;
//	mcast_table[crc >> 4] |= cpu_to_le16(1 << (crc & 0xf));
//
// with mcast_table the filter as four little-endian 16-bit words, so word
// crc>>4, bit crc&15 is bit crc of the 64-bit filter.
func Bin(mac [6]byte) int { return int(CRC(mac) >> 26) }

// Mask is the 64-bit logical address filter a driver programs for the
// joined addresses: bit Bin(a) set for each.
func Mask(joined [][6]byte) uint64 {
	var m uint64
	for _, a := range joined {
		m |= 1 << Bin(a)
	}
	return m
}

// MAC converts a 6-byte hardware address.
func MAC(hw net.HardwareAddr) ([6]byte, error) {
	var a [6]byte
	if len(hw) != 6 {
		return a, fmt.Errorf("hardware address %q is not 6 bytes (EUI-48)", hw)
	}
	copy(a[:], hw)
	return a, nil
}

// ParseMAC parses "01:00:5e:00:00:01" (or any form net.ParseMAC takes) into
// a 6-byte address.
func ParseMAC(s string) ([6]byte, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return [6]byte{}, err
	}
	return MAC(hw)
}

// IsMulticast reports whether a is a group address (I/G bit set), which
// includes broadcast.
func IsMulticast(a [6]byte) bool { return a[0]&1 != 0 }
