package nicfilter

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf/rlimit"
)

var (
	hostMAC    = mustMAC("02:00:00:00:00:01")
	otherMAC   = mustMAC("02:00:00:00:00:02")
	broadcast  = mustMAC("ff:ff:ff:ff:ff:ff")
	groupA     = mustMAC("01:00:5e:00:00:fb") // 224.0.0.251, bin 33
	groupB     = mustMAC("01:00:5e:00:00:01") // 224.0.0.1, bin 54
	sameBinA   = mustMAC("01:00:5e:7f:00:01") // 239.255.0.1, bin 33 too, not joined
	otherBin   = mustMAC("01:00:5e:00:00:02") // 224.0.0.2, bin 16, not joined
	ipv6Joined = mustMAC("33:33:00:00:00:01") // ff02::1, bin 23
)

func mustMAC(s string) [6]byte {
	a, err := ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return a
}

// frame is a minimal Ethernet II frame to dst carrying an IPv4 ethertype
// and zero payload, 60 bytes (the minimum without FCS).
func frame(dst [6]byte) []byte {
	f := make([]byte, 60)
	copy(f, dst[:])
	copy(f[6:], otherMAC[:])
	f[12], f[13] = 0x08, 0x00
	return f
}

// loadFilter loads the program, or skips the test where BPF is not allowed.
func loadFilter(t testing.TB) *Filter {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program needs root (CAP_BPF)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("BPF unavailable: %v", err)
	}
	f, err := New()
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("BPF not permitted here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func runFrame(t testing.TB, f *Filter, fr []byte) uint32 {
	t.Helper()
	ret, _, err := f.Program.Test(fr)
	if err != nil {
		t.Fatal(err)
	}
	return ret
}

func TestProgramVerdicts(t *testing.T) {
	f := loadFilter(t)
	frames := []struct {
		name string
		dst  [6]byte
	}{
		{"unicast mine", hostMAC},
		{"unicast other", otherMAC},
		{"broadcast", broadcast},
		{"joined multicast", groupA},
		{"joined IPv6 multicast", ipv6Joined},
		{"same-bin multicast not joined", sameBinA},
		{"other-bin multicast", otherBin},
	}
	P, U, M := Passed, DroppedUnicast, DroppedMulticast
	cases := []struct {
		name  string
		state State
		want  []Verdict // by frame
	}{
		{"perfect", State{Mode: Perfect}, []Verdict{P, U, P, P, P, M, M}},
		{"hash64", State{Mode: Hash64}, []Verdict{P, U, P, P, P, P, M}},
		{"promiscuous", State{Mode: Promiscuous}, []Verdict{P, P, P, P, P, P, P}},
		{"perfect allmulti", State{Mode: Perfect, AllMulti: true}, []Verdict{P, U, P, P, P, P, P}},
		{"hash64 allmulti", State{Mode: Hash64, AllMulti: true}, []Verdict{P, U, P, P, P, P, P}},
		{"hash64 promisc flag", State{Mode: Hash64, Promisc: true}, []Verdict{P, P, P, P, P, P, P}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.state
			s.MAC = hostMAC
			s.Joined = [][6]byte{groupA, groupB, ipv6Joined, otherMAC /* not a group: ignored */}
			if err := f.Set(s); err != nil {
				t.Fatal(err)
			}
			for i, fr := range frames {
				before, err := f.Counters()
				if err != nil {
					t.Fatal(err)
				}
				data := frame(fr.dst)
				ret := runFrame(t, f, data)
				want := c.want[i]
				wantRet := uint32(tcActShot)
				if want == Passed {
					wantRet = tcActOK
				}
				if ret != wantRet {
					t.Errorf("%s: returned %d, want %d (%s)", fr.name, ret, wantRet, want)
				}
				after, err := f.Counters()
				if err != nil {
					t.Fatal(err)
				}
				for v := range Verdict(numVerdicts) {
					var dp, db uint64
					if v == want {
						dp, db = 1, uint64(len(data))
					}
					if got := after[v].Packets - before[v].Packets; got != dp {
						t.Errorf("%s: %s packets +%d, want +%d", fr.name, v, got, dp)
					}
					if got := after[v].Bytes - before[v].Bytes; got != db {
						t.Errorf("%s: %s bytes +%d, want +%d", fr.name, v, got, db)
					}
				}
			}
		})
	}
}

func TestProgramFollowsGroupChanges(t *testing.T) {
	f := loadFilter(t)
	for _, mode := range []Mode{Perfect, Hash64} {
		t.Run(mode.String(), func(t *testing.T) {
			if err := f.Set(State{Mode: mode, MAC: hostMAC, Joined: [][6]byte{groupA}}); err != nil {
				t.Fatal(err)
			}
			if ret := runFrame(t, f, frame(groupA)); ret != tcActOK {
				t.Fatalf("joined group: returned %d", ret)
			}
			if err := f.Set(State{Mode: mode, MAC: hostMAC, Joined: [][6]byte{groupB}}); err != nil {
				t.Fatal(err)
			}
			if ret := runFrame(t, f, frame(groupA)); ret != tcActShot {
				t.Errorf("left group: returned %d, want %d", ret, tcActShot)
			}
			if ret := runFrame(t, f, frame(groupB)); ret != tcActOK {
				t.Errorf("newly joined group: returned %d", ret)
			}
			var n int
			var k [8]byte
			var v uint8
			it := f.Maps.Joined.Iterate()
			for it.Next(&k, &v) {
				n++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("joined map holds %d entries, want 1", n)
			}
			if err := f.Set(State{Mode: mode, MAC: otherMAC}); err != nil {
				t.Fatal(err)
			}
			if ret := runFrame(t, f, frame(hostMAC)); ret != tcActShot {
				t.Errorf("old own address after a MAC change: returned %d, want %d", ret, tcActShot)
			}
			if ret := runFrame(t, f, frame(otherMAC)); ret != tcActOK {
				t.Errorf("new own address: returned %d", ret)
			}
		})
	}
}

func TestSetTooManyGroups(t *testing.T) {
	f := loadFilter(t)
	var joined [][6]byte
	for i := range MaxJoined + 1 {
		joined = append(joined, [6]byte{0x01, 0x00, 0x5e, byte(i >> 16), byte(i >> 8), byte(i)})
	}
	if err := f.Set(State{Mode: Perfect, Joined: joined}); err != nil {
		t.Fatalf("more groups than the table holds: %v", err)
	}
	if !f.state.Overflow {
		t.Error("overflow not recorded")
	}
	// as a driver whose exact table overflowed: every multicast frame passes
	other := [6]byte{0x01, 0x00, 0x5e, 0x7f, 0x7f, 0x7f}
	if got := runFrame(t, f, frame(other)); got != tcActOK {
		t.Errorf("perfect filter over its table: multicast %v verdict %d, want pass", other, got)
	}
}

// BenchmarkProgram reports the program's cost per frame under
// BPF_PROG_TEST_RUN (which adds the test harness's own per-run overhead).
func BenchmarkProgram(b *testing.B) {
	f := loadFilter(b)
	for _, c := range []struct {
		name string
		mode Mode
		dst  [6]byte
	}{
		{"perfect/unicast_other", Perfect, otherMAC},
		{"perfect/multicast_joined", Perfect, groupA},
		{"perfect/multicast_not_joined", Perfect, otherBin},
		{"hash64/multicast_same_bin", Hash64, sameBinA},
		{"hash64/multicast_other_bin", Hash64, otherBin},
		{"promiscuous/unicast_other", Promiscuous, otherMAC},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := f.Set(State{Mode: c.mode, MAC: hostMAC, Joined: [][6]byte{groupA, groupB}}); err != nil {
				b.Fatal(err)
			}
			fr := frame(c.dst)
			_, per, err := f.Program.Benchmark(fr, b.N, b.ResetTimer)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(per.Nanoseconds()), "ns/frame")
		})
	}
}
