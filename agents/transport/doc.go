// Package transport is protolab's registry of message transports: each
// carries whole messages (a request of N bytes, a response of M bytes)
// between an initiator and a responder, so that one benchmark (package
// spims) can run unchanged over any of them.
//
// # Contract
//
// A [Transport] registers itself in init() under its name (one file each);
// [Get] with an unknown name fails listing the registered ones. It can say
// whether this host can run it ([Transport.Available]: nil, or why not,
// wrapping [ErrUnavailable]), listen, and dial (optionally from a local
// source address). A [Conn] sends and receives whole messages and describes
// its tuning as read back from the socket (congestion control, buffer sizes,
// nodelay, ...) for the run's manifest, and its own event counters
// (retransmissions, resends). Settings are per transport "knobs" with units
// ([Transport.Knobs]); an unknown knob is an error.
//
// Every transport has the knob dscp (0..63, or ef, af11..af43, cs0..cs7,
// va, le, default; [ParseDSCP]): IP_TOS, and IPV6_TCLASS on IPv6 sockets,
// set to dscp<<2 on the dialed socket, or on the listener's and every
// accepted one; Tuning reads it back as "dscp". [Conn.SetDSCP] marks one
// connection later, as a responder does when its initiator asks. The udp
// and quic responders share one socket among their peers, so a peer's own
// mark rides on each datagram as an IP_TOS / IPV6_TCLASS control message;
// under quic-go, whose per-datagram ECN marks would otherwise replace the
// socket's TOS byte, the code point is put back in front of its ECN bits.
//
// # Transports
//
//   - tcp: TCP_NODELAY on; knobs user_timeout (TCP_USER_TIMEOUT),
//     syn_retries, congestion, sndbuf, rcvbuf. Urgent data
//     ([UrgentConn]): a message whose last byte goes with MSG_OOB, read
//     inline (SO_OOBINLINE) at the other end.
//   - tls: tcp under crypto/tls, TLS 1.3 only; a self-signed ECDSA P-256
//     certificate made in memory at listen; the initiator skips verification.
//   - udp: one datagram per message (4-byte sequence number first); the
//     initiator resends after 200 ms, doubling, at most 5 times, and drops
//     replies to earlier requests. Request/response only.
//   - quic: quic-go, one long bidirectional stream per connection; more
//     on request ([MultistreamConn]: OpenStream, AcceptStream).
//   - mptcp: tcp with IPPROTO_MPTCP (Go's SetMultipathTCP); whether a
//     connection really is MPTCP is in its Tuning ("mptcp").
//   - sctp: one-to-one SCTP socket (IPPROTO_SCTP 132); needs the kernel's
//     sctp module, else Available says "kernel has no SCTP (...)".
//
// # Framing
//
// On every stream (tcp, tls, mptcp, sctp, the QUIC stream) a message is a
// 4-byte big-endian length and that many bytes, at most [MaxFrame] (16
// MiB). A longer prefix is an error before any allocation and the body
// buffer grows only with bytes that arrive, so a malformed or hostile
// prefix cannot make a reader allocate what the peer did not send. A read
// interrupted by a deadline keeps its partial message, so a caller may
// count a timeout and go on reading the same connection.
//
// A reader that knows what comes next without a reply (a bulk transfer's
// units) says so with [BatchReader]'s ExpectMessages: on tcp and mptcp the
// kernel then wakes it once per [ReadBatch] bytes (SO_RCVLOWAT, kept
// within the bytes still to come) instead of once per segment.
package transport
