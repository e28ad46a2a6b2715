package nicfilter

import (
	"strings"
	"testing"
)

// A /proc/net/dev_mcast of a lab host: two interfaces, IPv4 and IPv6 groups.
const devMcast = `1    lo              1     0     01005e000001
1    lo              1     0     333300000001
2    h1-eth0         1     0     333300000001
2    h1-eth0         1     0     01005e000001
2    h1-eth0         1     0     3333ff000002
2    h1-eth0         2     0     01005e0000fb
3    h1-eth1         1     0     01005e7f0001
`

func TestParseDevMcast(t *testing.T) {
	got, err := ParseDevMcast(strings.NewReader(devMcast), "h1-eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"33:33:00:00:00:01", "01:00:5e:00:00:01", "33:33:ff:00:00:02", "01:00:5e:00:00:fb"}
	if len(got) != len(want) {
		t.Fatalf("got %d addresses, want %d", len(got), len(want))
	}
	for i, w := range want {
		if fmtMAC(got[i]) != w {
			t.Errorf("address %d = %s, want %s", i, fmtMAC(got[i]), w)
		}
	}
	none, err := ParseDevMcast(strings.NewReader(devMcast), "h2-eth0")
	if err != nil || len(none) != 0 {
		t.Errorf("other interface: %v, %v", none, err)
	}
}

func TestParseDevMcastErrors(t *testing.T) {
	for _, bad := range []string{
		"2    h1-eth0         1     0\n",
		"x    h1-eth0         1     0     01005e000001\n",
		"2    h1-eth0         1     0     01005e00000g\n",
	} {
		if _, err := ParseDevMcast(strings.NewReader(bad), "h1-eth0"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestOpenHostRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		pid    int
		ifname string
	}{{0, "eth0"}, {-1, "eth0"}, {1, ""}, {1, "a/b"}, {1, "sixteen-chars-xx"}, {2147483646, "eth0"}} {
		if h, err := OpenHost(c.pid, c.ifname); err == nil {
			h.Close()
			t.Errorf("OpenHost(%d, %q): no error", c.pid, c.ifname)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, name := range Modes() {
		m, err := ParseMode(name)
		if err != nil || m.String() != name {
			t.Errorf("ParseMode(%q) = %v, %v", name, m, err)
		}
	}
	if _, err := ParseMode("hash32"); err == nil || !strings.Contains(err.Error(), "perfect, hash64, promiscuous") {
		t.Errorf("ParseMode(hash32): %v", err)
	}
}
