// Package dishost is the simulated DIS host of protolab: a generator of DIS
// PDUs for N entities and a receiver that subscribes to a share of the
// exercise's IP multicast groups, as in the host studies (1 and 2) of
// Bobo's 1997 AFIT thesis.
//
// # Datagram
//
// Every datagram carries one message: the thesis's 2-byte message address
// (sec. 3.1.3, big-endian) followed by one DIS PDU (package dis), then, only
// when a size larger than the message was asked for, zero padding up to that
// size (the DIS header's length field still gives the PDU's own length, so
// any DIS decoder reads the PDU; the padding is counted, not interpreted):
//
//	0  message address  uint16
//	2  DIS PDU          Header.Length bytes
//	.. zero padding     to the requested UDP payload size
//
// Sizes from 146 bytes up are made with Entity State PDUs that carry
// articulation parameters (144 + 16 k bytes, padded to the exact size);
// smaller sizes use a Collision PDU (60 bytes) padded up. A requested size
// below 62 bytes is rejected.
//
// # Addresses
//
// The packet address is the message address divided by the messages per
// packet address (32 in the thesis: 65536 message addresses on 2048 packet
// addresses). Packet address g is the IPv4 multicast group Base + g
// (default 239.192.0.0, organisation-local scope). An exercise of G groups
// uses packet addresses 0..G-1; a message for group g has message address
// g*P + (entity mod P) where P is the messages per packet address, so more
// than 2048 groups need P < 32 (P = 6 gives 10922 groups).
//
// # Traffic
//
// The generator sends messages for its entities round-robin at a constant
// rate or with exponential (Poisson) inter-arrival times, choosing each
// PDU's type from a mix (Entity State by default over 90 %); an entity that
// has not sent an Entity State PDU for the heartbeat interval (5 s) sends
// one whatever the mix says. Messages go to the groups in turn (message i
// to group i*S mod G, S coprime with G near 0.618 G), so every group gets the same
// share and the groups a receiver joins are spread evenly over time. The sender counts
// what it sent per group; with the receiver's joined groups that gives the
// exact number the receiver should have received.
//
// The receiver joins groups 0..K-1 (K = share x G, at least 1) with real
// IGMP joins on as many sockets as the kernel allows memberships per socket
// (net.ipv4.igmp_max_memberships, 20 by default: raise it in the node's
// network namespace for large K), each with IP_MULTICAST_ALL off so that a
// datagram is delivered to the one socket that joined its group. Receive
// buffers are 8192 bytes, the DIS maximum PDU size. It decodes every PDU,
// keeps a table of entities (12 s timeout), and measures the one-way delay
// from the PDU's absolute DIS timestamp (units of 3600/2^31 s, about 1.68
// us; all containers share the host's clock). Anything it cannot decode is
// a counted drop with its reason.
//
// # CPU
//
// A busy work loop (the thesis's method, sec. 3.2: "a timed loop of floating
// operations") runs beside the receiver: its iterations per second are
// measured first with no group joined (the calibration) and then while
// receiving; the fraction of loop throughput lost is the CPU that
// networking took from the application. The container's cgroup CPU time is
// measured by protolab-agent (protolab_cpu_seconds_total) and, for the
// receiver process alone, reported here from getrusage.
package dishost
