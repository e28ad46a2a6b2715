package metrics

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const procFixture = "testdata/proc"

// interfacesIn returns the sorted set of interface label values in samples.
func interfacesIn(samples map[string]float64) []string {
	seen := map[string]bool{}
	for k := range samples {
		if i := strings.Index(k, `interface="`); i >= 0 {
			rest := k[i+len(`interface="`):]
			seen[rest[:strings.Index(rest, `"`)]] = true
		}
	}
	out := []string{}
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestParseInterfaceList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"eth0", []string{"eth0"}},
		{"", nil},
		{"eth0,mgmt0", []string{"eth0", "mgmt0"}},
		{" eth0 , ,mgmt0, ", []string{"eth0", "mgmt0"}},
		{",", nil},
	}
	for _, tt := range tests {
		if got := ParseInterfaceList(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseInterfaceList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNetDevInterfaceExclusion(t *testing.T) {
	tests := []struct {
		name string
		mgmt string
		want []string
	}{
		{"default eth0", "eth0", []string{"eth1", "eth2", "veth-r1-r2"}},
		{"no mgmt: only lo excluded", "", []string{"eth0", "eth1", "eth2", "veth-r1-r2"}},
		{"comma list", "eth0,eth1", []string{"eth2", "veth-r1-r2"}},
		{"comma list with blanks", " eth0 , veth-r1-r2 ,", []string{"eth1", "eth2"}},
		{"lo given explicitly", "lo", []string{"eth0", "eth1", "eth2", "veth-r1-r2"}},
		{"unknown mgmt name is harmless", "mgmt0", []string{"eth0", "eth1", "eth2", "veth-r1-r2"}},
		{"everything excluded", "eth0,eth1,eth2,veth-r1-r2", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newNetDevCollector(Config{ProcPath: procFixture, MgmtInterfaces: ParseInterfaceList(tt.mgmt)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := updateValues(t, c)
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			if ifs := interfacesIn(got); !reflect.DeepEqual(ifs, tt.want) {
				t.Errorf("interfaces = %q, want %q", ifs, tt.want)
			}
			if len(got) != 8*len(tt.want) {
				t.Errorf("got %d samples, want 8 per interface (%d)", len(got), 8*len(tt.want))
			}
		})
	}
}

func TestNetDevValues(t *testing.T) {
	c, err := newNetDevCollector(Config{ProcPath: procFixture, MgmtInterfaces: []string{"eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := updateValues(t, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`protolab_interface_receive_bytes_total{interface="eth1"}`:        1048576,
		`protolab_interface_transmit_bytes_total{interface="eth1"}`:       2097152,
		`protolab_interface_receive_packets_total{interface="eth1"}`:      1000,
		`protolab_interface_transmit_packets_total{interface="eth1"}`:     2000,
		`protolab_interface_receive_errors_total{interface="eth1"}`:       2,
		`protolab_interface_receive_drops_total{interface="eth1"}`:        3,
		`protolab_interface_transmit_errors_total{interface="eth1"}`:      4,
		`protolab_interface_transmit_drops_total{interface="eth1"}`:       1,
		`protolab_interface_receive_drops_total{interface="veth-r1-r2"}`:  11,
		`protolab_interface_transmit_drops_total{interface="veth-r1-r2"}`: 12,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// The reader's own failures are tested in internal/counters; here, that the
// collector passes them on, and turns the reader's panic into an error.
func TestNetDevFailures(t *testing.T) {
	tests := []struct {
		name     string
		proc     string
		wantErr  string
		notFound bool
	}{
		{"net/dev missing", t.TempDir(), "reading net/dev", true},
		// procfs indexes fields without a length check: a truncated line
		// panics inside procfs, and safeUpdate must turn that into an error.
		{"truncated line", "testdata/proc-malformed", "panicked", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newNetDevCollector(Config{ProcPath: tt.proc, MgmtInterfaces: []string{"eth0"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = updateValues(t, c)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.notFound && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %q does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

// writeNetDev makes a proc dir whose net/dev has the two header lines and body.
func writeNetDev(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
	if err := os.WriteFile(filepath.Join(dir, "net", "dev"), []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Interfaces added after the agent starts (the lab plugs veths in later)
// must show up on the next scrape: nothing is cached.
func TestNetDevReadsAtScrapeTime(t *testing.T) {
	dir := writeNetDev(t, "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n")
	c, err := newNetDevCollector(Config{ProcPath: dir, MgmtInterfaces: []string{"eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := updateValues(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if ifs := interfacesIn(got); len(ifs) != 0 {
		t.Fatalf("before veth: interfaces = %q, want none", ifs)
	}
	writeNetDevInto(t, dir, "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth1: 100 2 0 0 0 0 0 0 200 3 0 0 0 0 0 0\n")
	got, err = updateValues(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if ifs := interfacesIn(got); !reflect.DeepEqual(ifs, []string{"eth1"}) {
		t.Fatalf("after veth: interfaces = %q, want [eth1]", ifs)
	}
	if v := got[`protolab_interface_transmit_bytes_total{interface="eth1"}`]; v != 200 {
		t.Errorf("eth1 transmit bytes = %v, want 200", v)
	}
}

func writeNetDevInto(t *testing.T, dir, body string) {
	t.Helper()
	src := writeNetDev(t, body)
	raw, err := os.ReadFile(filepath.Join(src, "net", "dev"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "net", "dev"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
