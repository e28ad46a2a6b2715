package linkem

import "testing"

func TestParseKernelStats(t *testing.T) {
	data := []byte("    0  12345     0 2    64     0     0        0  1\n" +
		" 4242 998877    17 2 65535     3    42  1234567  1\n")
	ks, err := parseKernelStats(data, 4242)
	if err != nil {
		t.Fatal(err)
	}
	want := KernelQueueStats{Queue: 4242, PortID: 998877, Waiting: 17, CopyMode: 2, CopyRange: 65535,
		QueueFull: 3, SocketFull: 42, LastID: 1234567, Initialized: true}
	if ks != want {
		t.Errorf("got %+v, want %+v", ks, want)
	}
	if _, err := parseKernelStats(data, 7); err == nil {
		t.Error("found a queue that is not there")
	}
	if _, err := parseKernelStats([]byte("garbage\n"), 0); err == nil {
		t.Error("parsed garbage")
	}
}
