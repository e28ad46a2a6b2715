// Package linkem emulates the impairments of one direction of one lab link
// in userspace, on packets that iptables hands over through NFQUEUE.
//
// The lab kernel has no sch_netem. It has HTB (rate limits stay with the
// orchestrator's HTB classes), iptables on nf_tables with the NFQUEUE
// target, veth and network namespaces. linkem takes netem's place for
// everything but the rate: delay and jitter, random and Gilbert-Elliott
// loss, reordering, corruption, duplication and a queue limit. One
// protolab-linkem process serves one direction of one link (one queue
// number); a link's other direction is another process on another queue.
//
// # Pipeline
//
// The kernel queues each packet and sends a copy of its first bytes to
// linkem over netlink (github.com/florianl/go-nfqueue binds the queue and
// receives; packets that are already waiting are read in batches with
// recvmmsg). [Emulator.ArriveBatch] decides each packet at once: dropped
// and undelayed packets get their verdict immediately (many verdicts go to
// the kernel in one sendmsg), the others go into a min-heap keyed by
// release time. One scheduler goroutine ([Emulator.Run]) sleeps on a
// timerfd armed for the earliest release (Go's own timers wake up to a
// millisecond late; a timerfd within microseconds) and issues the verdicts
// that are due, again in one batch; a reader that is busy with arrivals
// (under load it may keep the only P, GOMAXPROCS=1) sends what is due with
// its own batch instead. No goroutine per packet; holding and
// releasing a packet allocates nothing. The verdicts of held packets come
// late and out of order, which NFQUEUE allows.
//
// Each packet that finds linkem asleep pays for its wake-up: the netlink
// socket's readiness, an idle CPU leaving its halt (tens of microseconds
// on a VM) and the Go netpoller's hand-off; `protolab-linkem bench`
// measured ~60..80 us added at p50 on the lab VM. --busy-poll D
// (StartOptions.BusyPoll) keeps the receiving goroutine reading the socket
// without blocking for D after the last packet, releasing due held packets
// between reads, so that within a burst only the first packet pays: ~1..3
// us at p50. The price is a busy CPU while packets keep coming and, with
// GOMAXPROCS=1, HTTP requests (config changes, scrapes) served only when
// the runtime preempts the loop (up to ~10 ms); labs leave it off.
//
// The copy range is 64 bytes (headers, and the packet length) unless
// corruption or duplication is configured, which need the whole packet
// (65531 bytes, the kernel's maximum); it is switched when a configuration
// change needs it, widened before the change takes effect and narrowed
// after. A packet copied truncated around such a switch cannot be
// corrupted or duplicated: it passes unchanged and is counted in
// protolab_linkem_errors_total{kind="skipped"}.
//
// # Units
//
// Durations need a unit: "10ms", "1.5ms", "250us", "2s" ("0" is the only
// unitless value). Percentages are numbers from 0 to 100 with an optional
// "%": "1.5" and "1.5%" both mean 1.5 percent, never a fraction. The bit
// error rate is a plain probability per bit ("1e-6"). The JSON of
// GET/PUT /config uses the same strings (percentages may also be JSON
// numbers, in percent).
//
// # Delay and jitter
//
// Every packet gets delay + jitter*t, clamped at 0, with t drawn from the
// distribution (netem's tables reproduced, see dist.go; t is always within
// [-4, 4], so the longest delay is bounded):
//
//   - uniform (the default, as netem without a table): t uniform in
//     [-1, 1), so the delay is uniform in [delay-jitter, delay+jitter);
//     sd jitter/sqrt(3).
//   - normal: t standard normal truncated at +-4; sd jitter.
//   - pareto: t = (4/3)(X-1.5), X Pareto(1, 3), capped at 4: skewed to
//     long delays, t >= -2/3, mean -0.033*jitter, sd 0.82*jitter.
//   - paretonormal: (N+3P)/4 of the two at the same quantile, as netem's
//     table: mean -0.025*jitter, sd 0.835*jitter.
//
// Reordering by jitter: as in netem, packets are released in order of
// their release times, so a packet drawn a shorter delay than one before
// it overtakes it (netem reorders too when jitter is used without a rate).
// With keep-order, a packet's release time is raised to the latest
// release time given to a packet before it, so jitter never reorders: a packet
// drawn a short delay waits for the ones ahead of it (the delay
// distribution is then no longer exactly the configured one; its tail is
// unchanged, its low side is lifted). keep-order does not stop the explicit
// reorder below.
//
// Safety: a configuration whose longest possible delay exceeds [MaxHold]
// (60s) is rejected, and every release time is clamped to arrival+MaxHold,
// so nothing is held forever.
//
// # Loss
//
// loss PERCENT drops each packet independently with that probability.
//
// loss-ge "p,r,1-h,1-k" is netem's "loss gemodel p r 1-h 1-k", with the
// same defaults (r = 100-p, 1-h = 100, 1-k = 0) and the same per-packet
// steps: the model starts in the good state; for each packet, first the
// state transition is drawn (good to bad with probability p, bad to good
// with probability r), then the packet is lost with the loss probability
// of the state it arrived in (1-k in the good state, 1-h in the bad one).
// The long-run loss rate is pi_good*(1-k) + pi_bad*(1-h) with
// pi_bad = p/(p+r) ([GEModel.StationaryLoss]); with 1-h = 100 and 1-k = 0
// (the simple Gilbert model) loss bursts last 1/r packets on average.
// loss and loss-ge are exclusive.
//
// # Reordering
//
// reorder PERCENT sends that share of packets at once, without the delay
// (netem's "reorder P" with gap 1): they overtake the delayed packets in
// front of them. As in netem it needs a delay (a configuration with
// reorder and no delay is rejected). Reordered packets are counted as
// reordered (and passed).
//
// # Corruption
//
// corrupt PERCENT corrupts that share of packets; ber RATE corrupts a
// packet of L bytes (the whole IP packet) with probability
// 1-(1-ber)^(8L) ([BER.PacketProb]). A corrupted packet has one random bit
// flipped, chosen uniformly among the bits after its IP header (IPv4 with
// options, or the 40-byte IPv6 header) — the transport header and data,
// which the TCP/UDP/ICMP checksum covers — and goes back with the
// modified-packet verdict (the kernel then marks it CHECKSUM_NONE, so the
// receiver verifies the checksum and drops the datagram: UDP InErrors and
// mostly InCsumErrors). A UDP datagram sent with a zero (disabled)
// checksum over IPv4 is delivered corrupted. corrupt and ber are
// exclusive.
//
// # Duplication
//
// NFQUEUE cannot duplicate a packet: a verdict accepts or drops the one
// queued skb. linkem makes the copy itself: it keeps the packet's bytes
// (whole-packet copy range) and sends the copy through a raw IP socket
// (IPPROTO_RAW, IP_HDRINCL; IPv6 too) opened in the link's namespace, to
// the packet's own destination. For a packet addressed to that namespace
// (queued in a host's PREROUTING and delivered locally), the copy is
// routed to the local address and delivered through lo: the receiving
// socket gets two identical datagrams, checksums intact. This is tested
// over IPv4 and IPv6. The copy enters through lo, not the data-plane
// interface, so: the NFQUEUE rule must match the interface (-i IFACE),
// or the copy would be queued and impaired a second time; lo must be up
// (it is in lab hosts); and a socket bound to the data-plane device
// (SO_BINDTODEVICE) or filtering on the input interface would not see the
// copy. For forwarded packets (a router's PREROUTING) the copy goes out
// through the local output path: it skips the FORWARD chain and its TTL is
// not decremented.
//
// duplicate PERCENT combines with loss as in netem: the duplicate and loss
// draws are made per packet; a packet drawn lost and not duplicated is
// dropped, one drawn lost and duplicated goes out once, one drawn only
// duplicated goes out and so does a copy, which gets its own loss,
// corruption, limit and delay decisions (but is never duplicated again).
//
// # Limit
//
// limit PACKETS (default 1000, like netem; 0 means the default) bounds
// the packets held for their delay (originals and copies). A packet that
// would be held beyond it is dropped and counted as overflow. Packets
// without delay are not held and never overflow. The kernel queue is sized
// for the largest limit ([KernelQueueMaxLen]); what the kernel drops
// because its queue or linkem's socket is full (linkem too slow) is
// counted in protolab_linkem_kernel_dropped_packets_total.
//
// # Randomness
//
// All decisions come from one PCG source seeded by --seed (a random seed
// if none, reported in GET /config and the log). The draws for each packet
// are made in a fixed order and only for configured impairments (see
// [Decider]), so the same seed, configuration and packet sequence give
// the same decisions.
//
// # Counters
//
// protolab_linkem_packets_total{link,action} counts packet instances:
// passed, dropped and overflow are final, so that
// received + duplicated = passed + dropped + overflow + held; corrupted,
// reordered and duplicated count decisions (a corrupted or reordered
// packet is also passed; a duplicate's copy also ends passed, dropped or
// overflow). protolab_linkem_added_delay_seconds is the time from reading
// a packet to its verdict (to sending, for a copy), for passed packets.
//
// # Configuration changes
//
// PUT /config replaces the whole configuration (fields left out take their
// defaults). The new configuration is validated, then published with one
// atomic pointer swap: every packet is decided entirely under the old or
// the new one, and every packet read after the answer's effective_at uses
// the new one. Packets already held keep the release times they were
// given. In the tests a step from 0 to 50ms shows in the round trips
// within about 0.5ms of effective_at.
//
// # Stopping
//
// On SIGTERM or SIGINT ([Linkem.Stop]) linkem switches the kernel queue to
// fail-open with a length of 0 (new packets are accepted by the kernel
// without being queued), releases every held packet at once (corruptions
// applied, held copies sent), accepts whatever is still in the kernel
// queue with one batch verdict, and only then unbinds and exits 0.
// Unbinding a queue makes the kernel drop what is still queued, which is
// why that order matters; the tests see no packet lost across a stop
// under traffic. With --queue-bypass in the rule, traffic then flows
// unimpaired until a new linkem binds the queue.
//
// # Using it from the orchestrator
//
// For the direction X->Y of a link whose Y end is interface IFACE in
// host Y's namespace NS, pick a queue number N unique in NS and:
//
//	ip netns exec NS iptables -t mangle -A PREROUTING -i IFACE \
//	    -j NFQUEUE --queue-num N --queue-bypass
//	ip netns exec NS protolab-linkem --queue N --name X-Y --delay 20ms ...
//	    # or, from outside: protolab-linkem --netns /run/netns/NS ...
//	    # (or --netns /proc/PID/ns/net for a container)
//
// (the raw table works as well as mangle), with --control PATH: a unix
// socket of mode 0600 (ListenControl; peers of another user are refused
// even if the mode is loosened) serving /config, /metrics and /healthz,
// removed at exit. Read the first stdout line, "listening on unix:PATH":
// it is printed once the queue is bound, so traffic is impaired from then
// on. --listen ADDR adds a TCP listener for /metrics and /healthz only; it
// never serves /config, so nobody else on the machine can reconfigure the
// link. Timed steps: PUT /config with the whole configuration. Rate
// limits: HTB on the egress of the other end, as before. To stop:
// SIGTERM, wait for exit 0; then remove the rule if the link is torn down
// (with --queue-bypass it is harmless to leave).
package linkem
