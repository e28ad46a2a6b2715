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
// # Wire
//
// Every message starts with a 13-byte header (op, sequence number, two
// arguments; see proto.go), then the payload. Sizes in a job are payload
// bytes; the header and the transport's framing come on top. The responder
// (Serve) answers every procedure on every connection it accepts.
//
// # Results
//
// Per-iteration times are kept as samples (up to MaxSamples) and in a
// log-bucketed histogram (internal/measure); Stats gives mean, sd,
// normalized sd (sd/mean, SPIMS flags it above 0.05), min, max and
// p50/p99/p99.9, exact from the samples while all are kept. Result is the
// one JSON line of a run (schema protolab-spims/1).
package spims
