package nicfilter

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// bitwiseCRC is ether_crc_le written out bit by bit from the polynomial
// 0x04C11DB7, without any table: the reference the table CRC must match.
func bitwiseCRC(data []byte) uint32 {
	const p = 0x04C11DB7
	var rev uint32 // the polynomial bit-reversed
	for i := range 32 {
		if p&(1<<i) != 0 {
			rev |= 1 << (31 - i)
		}
	}
	c := uint32(0xFFFFFFFF)
	for _, b := range data {
		for i := range 8 {
			bit := (uint32(b) >> i) & 1 // LSB first, as the bits leave the wire
			if (c^bit)&1 != 0 {
				c = c>>1 ^ rev
			} else {
				c >>= 1
			}
		}
	}
	return c
}

func TestTableIsIEEE(t *testing.T) {
	if got, want := Table(), *crc32.MakeTable(crc32.IEEE); got != want {
		t.Fatal("the CRC table differs from hash/crc32's IEEE table")
	}
}

// Known pairs: the CRC and bin computed independently with Python's
// zlib.crc32 (bin = (~zlib.crc32(mac) & 0xffffffff) >> 26).
func TestBinKnownPairs(t *testing.T) {
	for _, c := range []struct {
		mac, group string
		crc        uint32
		bin        int
	}{
		{"01:00:5e:00:00:01", "224.0.0.1 all hosts", 0xd9b4c5fe, 54},
		{"01:00:5e:00:00:02", "224.0.0.2 all routers", 0x40bd9444, 16},
		{"01:00:5e:00:00:fb", "224.0.0.251 mDNS", 0x84dcdefc, 33},
		{"01:00:5e:7f:00:01", "239.255.0.1", 0x8619ea93, 33},
		{"01:00:5e:01:01:01", "224.1.1.1", 0xc16d9e88, 48},
		{"33:33:00:00:00:01", "ff02::1 all nodes", 0x5d55d99f, 23},
		{"ff:ff:ff:ff:ff:ff", "broadcast", 0xbe2612ff, 47},
	} {
		t.Run(c.group, func(t *testing.T) {
			a, err := ParseMAC(c.mac)
			if err != nil {
				t.Fatal(err)
			}
			if got := CRC(a); got != c.crc {
				t.Errorf("CRC(%s) = %#08x, want %#08x", c.mac, got, c.crc)
			}
			if got := Bin(a); got != c.bin {
				t.Errorf("Bin(%s) = %d, want %d", c.mac, got, c.bin)
			}
		})
	}
}

func TestCRCMatchesReferences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[int]bool)
	for range 10000 {
		var a [6]byte
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		c := CRC(a)
		if want := bitwiseCRC(a[:]); c != want {
			t.Fatalf("CRC(% x) = %#08x, bitwise %#08x", a, c, want)
		}
		if want := ^crc32.ChecksumIEEE(a[:]); c != want {
			t.Fatalf("CRC(% x) = %#08x, ^crc32.ChecksumIEEE %#08x", a, c, want)
		}
		b := Bin(a)
		if b < 0 || b >= Bins {
			t.Fatalf("Bin(% x) = %d", a, b)
		}
		seen[b] = true
	}
	if len(seen) != Bins {
		t.Errorf("10000 random addresses hit %d of the %d bins", len(seen), Bins)
	}
}

func TestMask(t *testing.T) {
	a, _ := ParseMAC("01:00:5e:00:00:01")
	b, _ := ParseMAC("01:00:5e:00:00:fb")
	c, _ := ParseMAC("01:00:5e:7f:00:01") // same bin as b
	if got, want := Mask([][6]byte{a, b, c}), uint64(1)<<54|1<<33; got != want {
		t.Errorf("Mask = %#016x, want %#016x", got, want)
	}
	if Mask(nil) != 0 {
		t.Error("Mask(nil) != 0")
	}
}

func TestParseMACErrors(t *testing.T) {
	for _, s := range []string{"", "01:00:5e", "00:00:00:00:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:00", "zz:00:00:00:00:00"} {
		if _, err := ParseMAC(s); err == nil {
			t.Errorf("ParseMAC(%q): no error", s)
		}
	}
}
