// Package spims is protolab's request/response benchmark: the three
// application types of SPIMS (Nordmark and Gunningberg, SICS R88006,
// 1988), bulk_get, request_response and connect_disconnect, over any
// registered transport (package transport), measured at the initiator
// with the monotonic clock, plus the dual-path redundancy mode of the
// SCIOP shipboard experiments (request sent on two paths, first reply
// wins).
//
// # Procedures
//
//   - request_response: K iterations; each sends a request of s payload
//     bytes (s drawn from a distribution) asking for a response of m bytes
//     (drawn, or as large as the request) and times the round trip;
//     optionally pauses for a drawn delay before the next. A response later
//     than the timeout counts as a timeout and is discarded when it comes
//     (requests carry sequence numbers); a round trip over the late bound
//     (50 ms, SCIOP's goal) counts as late and its wall-clock start is kept.
//   - bulk_get: K transfers on one connection; each asks the responder for
//     N units of s bytes and receives them; throughput at the receiver
//     (start request sent to last unit read) and at the sender (first write
//     to last write returned, reported back by the responder).
//   - connect_disconnect: K iterations of dial (with the transport's
//     handshake), optionally one exchange, close.
//
// Dual mode (request_response with a second target): each request goes on
// both connections and the first response wins; a path that fails is
// dropped and the run goes on with the other, a path that does not answer
// (a black hole) just never wins. The result counts each path's wins.
//
// # Source and destination
//
// SPIMS Appendix B names where the data units come from and go:
// <source> ::= "<" access, <destination> ::= ">" access, access ::= FILE
// name | MEMORY | VIRTUAL MEMORY. A job says it with source_data (at the
// side that sends the units: the responder for bulk_get, the initiator's
// requests for request_response) and destination_data (where bulk_get's
// initiator puts the units it receives), each {"access": ..., "path":
// ...}:
//
//   - memory (the default): one buffer, reused; its payload is zeros and
//     never rewritten, so a unit costs its header.
//   - virtual_memory: every unit in pages mapped for it alone (mmap),
//     written once per page by the sender or filled by the read at the
//     receiver, and unmapped after: the page faults, the zeroing by the
//     kernel and the mmap/munmap calls are part of the measured time.
//   - file: an absolute path. The sender reads each unit's payload where
//     the last one ended, from the start again at the end of the file; the
//     receiver truncates the file when the run starts and appends each unit
//     as it arrives (write(2) into the page cache, no fsync), inside the
//     measured time. A request source that is missing or empty is a job
//     error before anything is sent; a bulk source is the responder's,
//     checked by the responder before the first transfer.
//
// Fetching from the source is inside the time: a request_response round
// trip starts before the request's payload is fetched, a bulk transfer's
// sender time before the first unit's. Dual mode takes its requests from
// memory only (both paths send one buffer).
//
// # DiffServ marking
//
// The dscp knob (options {"dscp": "46"} or a name, "ef", "af41", "cs1";
// package transport) marks the initiator's sockets, and the responder
// marks its side of each connection with the same code point as asked:
// each request carries it (proto.go) and the responder sets it on the
// connection before answering; bulk_get sends it, with the source, in an
// untimed transfer of no units before the first. A responder started with
// serve --option dscp=N marks every connection from its handshake on.
// The result's paths[].tuning.dscp is read back from the initiator's
// socket.
//
// # Delays and expedited data (bulk_get)
//
// With "delays" the responder notes CLOCK_MONOTONIC when each unit's
// write returns and sends the times with the stop answer, and the
// initiator reads the same clock when the unit is read: one clock because both run on one kernel (the boot_id
// is compared; containers of one host share it), as protolab-tp4's stamps
// are. The result has each unit's delay and Table 1's per-octet delay
// (seed 002). With "expedited" the responder also sends a small message
// after every 1/rate-th unit, via TCP urgent data in the bulk's stream, a
// second connection, or a second QUIC stream (expedited.go says what each
// means, TCP urgent data's limits included), and the result has their
// delays and count; the transfer's time and throughput do not include
// them. "sender_counters" brings the responder's connection counters
// (TCP retransmissions, QUIC packets lost) back in each stop answer.
//
// # Wire
//
// Every message starts with a 13-byte header (op, sequence number, two
// arguments; see proto.go), then the payload. Sizes in a job are payload
// bytes; the header and the transport's framing come on top. The responder
// (Serve) answers every procedure on every connection it accepts, one
// serve for every job: what a job asks of it (the mark, the bulk source)
// travels in the connection and holds for that connection. Every size a
// message asks for is checked before anything is allocated for it: a
// response or unit up to the transport's message (MaxPayload), stamped
// units up to MaxStampedUnits, an expedited token up to MaxTokenBytes; a
// message past one is refused with opError, counted
// (protolab_spims_refused_messages_total{reason}) and its connection
// closed. FuzzServeConn feeds the handler arbitrary streams.
//
// # Results
//
// Per-iteration times are kept as samples (up to MaxSamples) and in a
// log-bucketed histogram (internal/measure); Stats gives mean, sd,
// normalized sd (sd/mean, SPIMS flags it above 0.05), min, max and
// p50/p99/p99.9, exact from the samples while all are kept. Result is the
// one JSON line of a run (schema protolab-spims/1).
package spims
