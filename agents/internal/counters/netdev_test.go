package counters

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// The fake proc dirs are shared with the metrics collector's tests.
func procFixture(name string) string {
	return filepath.Join("..", "..", "metrics", "testdata", name)
}

const netDevHead = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"

func TestReadNetDev(t *testing.T) {
	devs, err := ReadNetDev(procFixture("proc"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(devs))
	for n := range devs {
		names = append(names, n)
	}
	sort.Strings(names)
	if want := []string{"eth0", "eth1", "eth2", "lo", "veth-r1-r2"}; !reflect.DeepEqual(names, want) {
		t.Errorf("interfaces = %q, want %q", names, want)
	}
	want := procfs.NetDevLine{Name: "eth1", RxBytes: 1048576, RxPackets: 1000, RxErrors: 2, RxDropped: 3, RxMulticast: 5,
		TxBytes: 2097152, TxPackets: 2000, TxErrors: 4, TxDropped: 1}
	if got := devs["eth1"]; got != want {
		t.Errorf("eth1 = %+v, want %+v", got, want)
	}
	if got := devs["veth-r1-r2"]; got.RxDropped != 11 || got.TxDropped != 12 {
		t.Errorf("veth-r1-r2 drops = %d/%d, want 11/12", got.RxDropped, got.TxDropped)
	}
}

func TestReadNetDevFailures(t *testing.T) {
	tests := []struct {
		name     string
		proc     string
		wantErr  string
		notFound bool
	}{
		{"proc dir missing", filepath.Join(t.TempDir(), "nope"), "opening procfs", true},
		{"net/dev missing", t.TempDir(), "reading net/dev", true},
		{"bad number", writeTree(t, map[string]string{"net/dev": netDevHead + "  eth1: 1 2 3 4 5 6 7 8 nine 10 11 12 13 14 15 16\n"}),
			"reading net/dev", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadNetDev(tt.proc)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.notFound && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %q does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

// procfs indexes fields without a length check: a truncated line panics,
// which is why metrics runs collectors under recover.
func TestReadNetDevTruncatedLinePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic on a truncated line; metrics' netdev failure test can then be relaxed")
		}
	}()
	_, _ = ReadNetDev(procFixture("proc-malformed"))
}

// The link emulator's benchmark reads a namespace's counters through
// /proc/thread-self; here that is this test's own namespace.
func TestReadNetDevThreadSelf(t *testing.T) {
	devs, err := ReadNetDev("/proc/thread-self")
	if err != nil {
		t.Skipf("no /proc/thread-self/net/dev here: %v", err)
	}
	if _, ok := devs["lo"]; !ok {
		t.Errorf("interfaces %v lack lo", devs)
	}
}
