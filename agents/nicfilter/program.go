package nicfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Mode is how the modelled NIC filters destination addresses.
type Mode uint32

const (
	// Perfect passes unicast for the interface's own address and multicast
	// for exactly the joined link-layer addresses (today's NICs).
	Perfect Mode = 0
	// Hash64 passes unicast as Perfect and multicast whose bin is set in
	// the 64-bin CRC filter of the joined addresses (the LANCE's LADRF).
	Hash64 Mode = 1
	// Promiscuous passes every frame.
	Promiscuous Mode = 2
)

var modeNames = map[Mode]string{Perfect: "perfect", Hash64: "hash64", Promiscuous: "promiscuous"}

func (m Mode) String() string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// Modes are the mode names ParseMode accepts.
func Modes() []string { return []string{"perfect", "hash64", "promiscuous"} }

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	for m, n := range modeNames {
		if n == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown NIC filter mode %q (known: %s)", s, strings.Join(Modes(), ", "))
}

// Verdict is what the filter did with a frame; the counters' index.
type Verdict uint32

const (
	Passed           Verdict = 0
	DroppedUnicast   Verdict = 1
	DroppedMulticast Verdict = 2
	numVerdicts              = 3
)

var verdictNames = [numVerdicts]string{"passed", "dropped_unicast", "dropped_multicast"}

func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint32(v))
}

// MaxJoined bounds the joined addresses of one interface in Perfect mode.
const MaxJoined = 1024

// The config map's one value (host byte order, read by the program).
const (
	cfgMode     = 0  // u32 Mode
	cfgAllMulti = 4  // u32: nonzero passes every multicast frame (IFF_ALLMULTI)
	cfgMAC      = 8  // [6]byte the interface's address, then 2 zero bytes
	cfgMask     = 16 // u64 the 64-bin filter, bit b = bin b
	cfgSize     = 24
)

// Offsets in struct __sk_buff (include/uapi/linux/bpf.h).
const (
	skbLen     = 0
	skbData    = 76
	skbDataEnd = 80
)

// Return codes of a tc program.
const (
	tcActOK   = 0
	tcActShot = 2
)

// Maps are the program's maps.
type Maps struct {
	Config   *ebpf.Map // array[1] of the config above, read by direct value access
	CRCTable *ebpf.Map // array[1] of [256]u32, the CRC table, by direct value access
	Joined   *ebpf.Map // hash: 8-byte key (address, 2 zero bytes) -> u8, Perfect's multicast set
	Counters *ebpf.Map // per-CPU array[3] by Verdict: {packets, bytes u64}
}

// NewMaps creates the maps and fills the CRC table.
func NewMaps() (*Maps, error) {
	var m Maps
	var err error
	mk := func(dst **ebpf.Map, spec *ebpf.MapSpec) {
		if err == nil {
			*dst, err = ebpf.NewMap(spec)
			if err != nil {
				err = fmt.Errorf("creating map %s: %w", spec.Name, err)
			}
		}
	}
	mk(&m.Config, &ebpf.MapSpec{Name: "nicf_config", Type: ebpf.Array, KeySize: 4, ValueSize: cfgSize, MaxEntries: 1})
	mk(&m.CRCTable, &ebpf.MapSpec{Name: "nicf_crc", Type: ebpf.Array, KeySize: 4, ValueSize: 4 * 256, MaxEntries: 1})
	mk(&m.Joined, &ebpf.MapSpec{Name: "nicf_joined", Type: ebpf.Hash, KeySize: 8, ValueSize: 1, MaxEntries: MaxJoined})
	mk(&m.Counters, &ebpf.MapSpec{Name: "nicf_counters", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: numVerdicts})
	if err == nil {
		tbl := make([]byte, 4*256)
		for i, v := range Table() {
			binary.NativeEndian.PutUint32(tbl[4*i:], v)
		}
		if err = m.CRCTable.Update(uint32(0), tbl, ebpf.UpdateAny); err != nil {
			err = fmt.Errorf("filling the CRC table: %w", err)
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return &m, nil
}

// Close closes the maps that exist.
func (m *Maps) Close() {
	for _, x := range []*ebpf.Map{m.Config, m.CRCTable, m.Joined, m.Counters} {
		if x != nil {
			x.Close()
		}
	}
}

// Instructions is the SCHED_CLS program over maps m. It reads the first 6
// bytes of the frame (the destination address) and returns TC_ACT_OK or
// TC_ACT_SHOT, counting the verdict:
//
//	broadcast                     pass
//	promiscuous                   pass
//	unicast                       pass if dst == config MAC, else drop (unicast)
//	multicast, allmulti           pass
//	multicast, perfect            pass if dst is in Joined, else drop (multicast)
//	multicast, hash64             pass if mask bit Bin(dst) is set, else drop (multicast)
//
// A frame shorter than 6 bytes passes. The CRC is the table-driven
// ether_crc_le, unrolled over the 6 bytes, with the table read by direct
// map value access (no helper calls); Perfect's lookup and the counter
// update are the only helper calls.
//
// Instructions stays one function: it is one BPF program, read top to bottom against the verifier's view.
func Instructions(m *Maps) asm.Instructions {
	const (
		rCtx    = asm.R6
		rCfg    = asm.R7
		rVerd   = asm.R8
		rData   = asm.R2
		rEnd    = asm.R3
		rDst4   = asm.R4 // dst bytes 0..3 as loaded (native order)
		rDst2   = asm.R5 // dst bytes 4..5
		keySlot = -8     // Joined key on the stack
		cntSlot = -16    // Counters key on the stack
	)
	insns := asm.Instructions{
		asm.Mov.Reg(rCtx, asm.R1),
		asm.LoadMem(rData, rCtx, skbData, asm.Word),
		asm.LoadMem(rEnd, rCtx, skbDataEnd, asm.Word),
		asm.Mov.Reg(asm.R1, rData),
		asm.Add.Imm(asm.R1, 6),
		asm.JGT.Reg(asm.R1, rEnd, "pass"),
		asm.LoadMapValue(rCfg, m.Config.FD(), 0),
		asm.LoadMem(rDst4, rData, 0, asm.Word),
		asm.LoadMem(rDst2, rData, 4, asm.Half),
		// Broadcast always passes.
		asm.JNE.Imm32(rDst4, -1, "not_broadcast"),
		asm.JEq.Imm(rDst2, 0xffff, "pass"),
		asm.LoadMem(asm.R0, rCfg, cfgMode, asm.Word).WithSymbol("not_broadcast"),
		asm.JEq.Imm(asm.R0, int32(Promiscuous), "pass"),
		asm.LoadMem(asm.R1, rData, 0, asm.Byte),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, "multicast"),
		// Unicast: only the interface's own address.
		asm.LoadMem(asm.R1, rCfg, cfgMAC, asm.Word),
		asm.JNE.Reg(asm.R1, rDst4, "drop_unicast"),
		asm.LoadMem(asm.R1, rCfg, cfgMAC+4, asm.Half),
		asm.JNE.Reg(asm.R1, rDst2, "drop_unicast"),
		asm.Ja.Label("pass"),
		// Multicast.
		asm.LoadMem(asm.R1, rCfg, cfgAllMulti, asm.Word).WithSymbol("multicast"),
		asm.JNE.Imm(asm.R1, 0, "pass"),
		asm.JEq.Imm(asm.R0, int32(Hash64), "hash64"),
		// Perfect: the exact set.
		asm.StoreImm(asm.RFP, keySlot+4, 0, asm.Word), // bytes 6, 7 of the key stay zero
		asm.StoreMem(asm.RFP, keySlot, rDst4, asm.Word),
		asm.StoreMem(asm.RFP, keySlot+4, rDst2, asm.Half),
		asm.LoadMapPtr(asm.R1, m.Joined.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keySlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop_multicast"),
		asm.Ja.Label("pass"),
		// Hash64: crc = ~0; for each byte crc = table[(crc ^ b) & 0xff] ^ crc >> 8.
		asm.LoadMapValue(asm.R9, m.CRCTable.FD(), 0).WithSymbol("hash64"),
		asm.Mov.Imm32(asm.R3, -1),
	}
	for i := range int16(6) {
		insns = append(insns,
			asm.LoadMem(asm.R1, rData, i, asm.Byte),
			asm.Xor.Reg(asm.R1, asm.R3),
			asm.And.Imm(asm.R1, 0xff),
			asm.LSh.Imm(asm.R1, 2),
			asm.Mov.Reg(asm.R0, asm.R9),
			asm.Add.Reg(asm.R0, asm.R1),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.RSh.Imm32(asm.R3, 8),
			asm.Xor.Reg32(asm.R3, asm.R1),
		)
	}
	insns = append(insns,
		asm.RSh.Imm32(asm.R3, 26), // the bin, 0..63
		asm.LoadMem(asm.R1, rCfg, cfgMask, asm.DWord),
		asm.RSh.Reg(asm.R1, asm.R3),
		asm.And.Imm(asm.R1, 1),
		asm.JEq.Imm(asm.R1, 0, "drop_multicast"),
		// Verdicts.
		asm.Mov.Imm(rVerd, int32(Passed)).WithSymbol("pass"),
		asm.Ja.Label("count"),
		asm.Mov.Imm(rVerd, int32(DroppedUnicast)).WithSymbol("drop_unicast"),
		asm.Ja.Label("count"),
		asm.Mov.Imm(rVerd, int32(DroppedMulticast)).WithSymbol("drop_multicast"),
		// Count packets and bytes (per CPU: no atomics needed).
		asm.StoreMem(asm.RFP, cntSlot, rVerd, asm.Word).WithSymbol("count"),
		asm.LoadMapPtr(asm.R1, m.Counters.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, cntSlot),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "verdict"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R2, rCtx, skbLen, asm.Word),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, tcActOK).WithSymbol("verdict"),
		asm.JEq.Imm(rVerd, int32(Passed), "exit"),
		asm.Mov.Imm(asm.R0, tcActShot),
		asm.Return().WithSymbol("exit"),
	)
	return insns
}

// ProgramSpec is the program over maps m, for ebpf.NewProgram.
func ProgramSpec(m *Maps) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:         "nic_filter",
		Type:         ebpf.SchedCLS,
		Instructions: Instructions(m),
		License:      "GPL",
	}
}

// State is what the modelled NIC is programmed with.
type State struct {
	Mode Mode
	// MAC is the interface's own (unicast) address.
	MAC [6]byte
	// Joined are the link-layer multicast addresses the host's stack
	// asked for (its dev_mcast list); non-group addresses are ignored.
	Joined [][6]byte
	// AllMulti and Promisc mirror IFF_ALLMULTI and IFF_PROMISC: a driver
	// then opens its filter to all multicast, or to everything.
	AllMulti, Promisc bool
	// Overflow is set by Filter.Set when Joined holds more than MaxJoined
	// addresses: a perfect filter then passes all multicast.
	Overflow bool
}

// Filter is one loaded filter program with its maps.
type Filter struct {
	Maps    *Maps
	Program *ebpf.Program

	mu     sync.Mutex
	joined map[[6]byte]bool // what Joined holds
	state  State
}

// New creates the maps and loads the program (needs CAP_BPF and
// CAP_NET_ADMIN). The filter starts in Perfect mode with a zero MAC and no
// groups: only broadcast passes until Set.
func New() (*Filter, error) {
	m, err := NewMaps()
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(ProgramSpec(m))
	if err != nil {
		m.Close()
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading the filter program: %+v", ve)
		}
		return nil, fmt.Errorf("loading the filter program: %w", err)
	}
	return &Filter{Maps: m, Program: prog, joined: map[[6]byte]bool{}}, nil
}

// Close unloads the program and its maps (an attachment keeps its own
// reference until it is closed).
func (f *Filter) Close() {
	f.Program.Close()
	f.Maps.Close()
}

// Set programs the filter. Joined is updated before the config, so a group
// added passes from the moment its bin or entry is in place; between the
// two updates a frame may see the old mode or mask (as a NIC being
// reprogrammed may).
func (f *Filter) Set(s State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[[6]byte]bool{}
	var groups [][6]byte
	for _, a := range s.Joined {
		if IsMulticast(a) && !want[a] {
			want[a] = true
			groups = append(groups, a)
		}
	}
	// More groups than the exact table holds: a driver then opens its NIC to
	// all multicast (as Linux drivers do when the list overflows the
	// hardware's filter) and the kernel filters. Hash64 needs no table.
	s.Overflow = len(want) > MaxJoined
	if s.Overflow {
		want = map[[6]byte]bool{}
	}
	for a := range want {
		if !f.joined[a] {
			if err := f.Maps.Joined.Update(joinedKey(a), uint8(1), ebpf.UpdateAny); err != nil {
				return fmt.Errorf("adding %s to the joined set: %w", fmtMAC(a), err)
			}
			f.joined[a] = true
		}
	}
	cfg := make([]byte, cfgSize)
	mode := s.Mode
	if s.Promisc {
		mode = Promiscuous
	}
	binary.NativeEndian.PutUint32(cfg[cfgMode:], uint32(mode))
	if s.AllMulti || (s.Overflow && mode == Perfect) {
		binary.NativeEndian.PutUint32(cfg[cfgAllMulti:], 1)
	}
	copy(cfg[cfgMAC:], s.MAC[:])
	binary.NativeEndian.PutUint64(cfg[cfgMask:], Mask(groups))
	if err := f.Maps.Config.Update(uint32(0), cfg, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("writing the filter config: %w", err)
	}
	for a := range f.joined {
		if !want[a] {
			if err := f.Maps.Joined.Delete(joinedKey(a)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("removing %s from the joined set: %w", fmtMAC(a), err)
			}
			delete(f.joined, a)
		}
	}
	s.Joined = groups
	f.state = s
	return nil
}

// State is the state last Set.
func (f *Filter) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state
	s.Joined = slices.Clone(s.Joined)
	return s
}

// Count is one verdict's packets and bytes (skb->len: the frame without FCS).
type Count struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// Counters are the totals over all CPUs, by verdict.
type Counters [numVerdicts]Count

// Counters reads the per-CPU counters and sums them.
func (f *Filter) Counters() (Counters, error) {
	var c Counters
	for v := range Verdict(numVerdicts) {
		var per [][]byte
		if err := f.Maps.Counters.Lookup(uint32(v), &per); err != nil {
			return c, fmt.Errorf("reading counter %s: %w", v, err)
		}
		for _, b := range per {
			c[v].Packets += binary.NativeEndian.Uint64(b[0:])
			c[v].Bytes += binary.NativeEndian.Uint64(b[8:])
		}
	}
	return c, nil
}

func joinedKey(a [6]byte) [8]byte {
	var k [8]byte
	copy(k[:], a[:])
	return k
}

func fmtMAC(a [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5])
}
