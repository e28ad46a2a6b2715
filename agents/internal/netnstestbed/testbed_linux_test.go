package netnstestbed

import (
	"net"
	"reflect"
	"testing"
)

// The rules are built without creating anything.
func TestQueueRules(t *testing.T) {
	tb := &Testbed{IfB: "plt-xb", Queue: 7,
		AddrA: net.IPv4(192, 0, 2, 1).To4(), AddrB: net.IPv4(192, 0, 2, 2).To4(),
		Addr6A: net.ParseIP("2001:db8::1"), Addr6B: net.ParseIP("2001:db8::2")}
	tests := []struct {
		name string
		got  []string
		src  string
		dst  string
	}{
		{"IPv4", tb.QueueRule(), "192.0.2.1", "192.0.2.2"},
		{"IPv6", tb.QueueRule6(), "2001:db8::1", "2001:db8::2"},
	}
	for _, tt := range tests {
		want := []string{"PREROUTING", "-i", "plt-xb", "-p", "udp", "-s", tt.src, "-d", tt.dst,
			"-j", "NFQUEUE", "--queue-num", "7", "--queue-bypass"}
		if !reflect.DeepEqual(tt.got, want) {
			t.Errorf("%s: rule %q, want %q", tt.name, tt.got, want)
		}
	}
}
