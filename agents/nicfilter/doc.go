// Package nicfilter models a host NIC's receive address filter on an
// emulated LAN, as an eBPF SCHED_CLS program at the egress of the bridge
// port toward the host.
//
// On a hub every frame is flooded to every port, and a veth accepts every
// frame: the host's kernel then drops the frames for other unicast
// addresses and for multicast groups it did not join, and pays CPU for
// each. A real NIC drops unicast for others in hardware, at no CPU cost,
// and filters multicast either exactly (today's NICs, up to their table
// size) or with a hash: the AMD LANCE (Am7990) and PCnet (Am79C9xx)
// "logical address filter" of 64 bins selected by the 6 most significant
// bits of the CRC-32 of the destination address (see Bin). Frames whose
// address hashes to a joined group's bin reach the kernel, which filters
// them in software: a 1990s host paid for the groups sent on its LAN, not
// only the ones it joined.
//
// Modes (Mode): Perfect, Hash64, Promiscuous. Broadcast always passes; the
// host's IFF_PROMISC and IFF_ALLMULTI open the filter as a driver would.
// Counters per Verdict (passed, dropped_unicast, dropped_multicast;
// packets and bytes) are in a per-CPU array map.
//
// The program (Instructions) is written with cilium/ebpf's asm package:
// no C compiler is needed. Its maps: a one-element array with the mode,
// the host's address and the 64-bit filter; a one-element array holding
// the 256-entry CRC table (both read by direct map value access, without
// helper calls); a hash of the joined addresses for Perfect; the counters.
// The CRC is the table-driven ether_crc_le unrolled over the 6 bytes.
//
// Where it sits: Filter.AttachEgress attaches with tcx (Linux 6.6+) at the
// egress of the bridge port in the root network namespace. tcx egress runs
// in __dev_queue_xmit before the port's qdisc, so a dropped frame never
// enters the port's queue or shaper, as a frame the NIC ignores takes
// nothing from the host's receive path. It still occupied the LAN: a
// protolab hub shapes its shared medium where frames enter the bridge (an
// IFB on every port's ingress), upstream of this filter. The attachment
// is not pinned: it goes when the link is closed or the process exits.
//
// Host reads what a driver's ndo_set_rx_mode would program into the NIC:
// the interface's address and flags (ioctls on a socket opened in the
// host's network namespace) and its link-layer multicast list
// (/proc/PID/net/dev_mcast). The command protolab-nicfilter polls it and
// calls Filter.Set with what it reads.
//
// Not modelled: secondary unicast addresses (dev_uc, macvlan), a perfect
// filter's limited table size (a NIC falls back to all-multicast when it
// is full), VLAN filtering.
package nicfilter
