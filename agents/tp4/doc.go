// Package tp4 is a small class-4-like transport (ISO 8073 extended
// formats) over UDP, built to re-measure Colella, Aronoff and Mills,
// "Performance improvements for ISO transport" (NBS): one-for-one versus
// selective acknowledgement, and the ISO versus the NBS expedited data
// mechanism, on a 64 kbit/s long-delay link with bit errors.
//
// # Wire format
//
// One TPDU per UDP datagram, big-endian, ISO 8073's extended formats
// (31-bit sequence numbers, 16-bit credit). Octet 1 is the length
// indicator (header octets after it), octet 2 the code:
//
//	CR  E0|CDT DST-REF=0 SRC-REF class=0x42 [C0 1 log2(size)] [C6 1 options]
//	CC  D0|CDT DST-REF SRC-REF class [C0 1 log2(size)] [C6 1 options]
//	DR  80 DST-REF SRC-REF reason
//	DC  C0 DST-REF SRC-REF
//	DT  F0 DST-REF EOT|TPDU-NR(31)  user data (TPDU size - 8 octets at most)
//	ED  10 DST-REF EOT|ED-NR(31)    user data (16 octets at most)
//	AK  60 DST-REF YR-TU-NR(31) CDT(16) [8F 4 selective TPDU-NR]
//	EA  20 DST-REF YR-EDTU-NR(31)
//
// The AK is the paper's Fig. 3 octet for octet: 10 octets, or 16 with the
// optional sequence number. The paper leaves the parameter code open; we
// use 0x8F. YR-TU-NR is the next sequence number expected (ISO), so it
// confirms every DT below it. Options: 0x01 expedited data, 0x20 selective
// acknowledgement; the CC echoes what the responder agrees to, and
// selective acknowledgement is used only when both ends have it. The TPDU
// size (header included, a power of two 128..8192) is the smaller of the
// two ends'. The CC's CDT has four bits, so the responder follows it with
// an AK that grants the full credit. [Decode] never panics: a malformed
// TPDU is a *DecodeError whose [Reason] ("short", "length", "type",
// "param", "value", "too_large") is the drop counter's label.
//
// # Mechanisms
//
// A connection is simplex, as in the paper's experiments: a [Sender]
// (initiator) and a [Receiver] (responder). Both are state machines
// without I/O, driven by Input (a datagram), Output (the next TPDU, nil
// when there is none) and Deadline (when to call Output again), so the
// same code runs over UDP ([Loop]) and over an in-memory link in virtual
// time ([Simulate]).
//
// The sender segments each TSDU into DTs (EOT on the last) and keeps each
// DT, with its own retransmission timer, until it is acknowledged; the
// window is the receiver's credit above the last cumulative
// acknowledgement, capped by the sender's own window. A DT whose timer
// runs out is sent again (the lowest first), and after MaxTransmissions
// the connection is given up with a DR. Nothing else goes back: with
// one-for-one acknowledgement the DTs after a lost one are confirmed only
// when the gap is filled, so their timers run out too and they are sent
// again although they arrived (the paper's "unnecessary retransmissions").
//
// The receiver sends an AK for every DT (the paper's maximum ack delay is
// infinite, i.e. none). DTs after a gap are kept while the receive buffer
// has room and handed on in sequence once the gap is filled; with
// selective acknowledgement each of them is confirmed at once by the AK's
// optional sequence number (one per AK, as in Fig. 3), which stops its
// timer at the sender and frees its send buffer, but does not move the
// window's lower edge. The receive buffer counts the octets of held DTs
// and of the TSDU being reassembled.
//
// Expedited TSDUs go ahead of all normal data, one unacknowledged at a
// time. ISO: no new DT while an expedited TSDU is queued or awaits its EA
// (retransmissions still go). NBS: every DT is marked with the number of
// expedited requests the user made before its TSDU, and may go once that
// many EAs have returned, so normal data handed over before the expedited
// request keeps flowing. The receiver cannot tell the two apart.
//
// # Measurement
//
// The workload ([Feeder], [Meter]) is the paper's: TSDUs "continuously
// queued" (handed over whenever the send buffer takes them), an expedited
// TSDU after every N-th ([ExpeditedEvery] of the expedited rate), each
// stamped with its hand-over time and filled with a checked pattern. Table
// 1's figures: throughput efficiency = user octets / (last delivery -
// first hand-over) / link speed in octets/s; average per-octet delay = the
// mean over TSDUs of delay / size; expedited delay; retransmissions;
// receive buffer use as a time average (from the CC to the DR) and a
// maximum, in octets.
//
// Not modelled: the paper's network window of 4 messages, checksums (UDP
// has one), concatenation, splitting, multiplexing, data in both
// directions, sequence number wrap.
package tp4
