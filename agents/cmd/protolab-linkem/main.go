// Command protolab-linkem emulates the impairments of one direction of one
// lab link (delay with jitter, loss, reordering, corruption, duplication,
// a held-packet limit) in userspace, on the packets that iptables sends to
// an NFQUEUE. It exists because the lab kernel has no sch_netem; rate
// limits are left to HTB. See package protolab/agents/linkem for the
// semantics, and `protolab-linkem --help`.
//
// `protolab-linkem bench` measures the packets per second it sustains and
// the delay it adds (root only).
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"protolab/agents/linkem"
	"protolab/agents/metrics"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = metrics.DefaultVersion
	revision = metrics.DefaultRevision
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usageHeader = `Usage: protolab-linkem [flags]
       protolab-linkem bench [bench flags]   (measure throughput; root; see bench --help)

Emulates one direction of one link on the packets that iptables sends to
NFQUEUE number --queue, as netem would: every packet is dropped, or
forwarded after its delay, possibly corrupted, reordered or duplicated.
Run it in the network namespace whose PREROUTING rule queues the packets,
e.g. (the -i is required when --duplicate is used):

  ip netns exec NS iptables -t mangle -A PREROUTING -i IFACE \
      -j NFQUEUE --queue-num N --queue-bypass
  ip netns exec NS protolab-linkem --queue N --name LINK --delay 20ms ...

Units: durations need a unit (ns, us, ms, s: "10ms", "1.5ms", "250us";
only "0" may go without). Percentages are numbers from 0 to 100 with an
optional "%" ("1.5" and "1.5%" both mean 1.5 percent, never a fraction).
The bit error rate is a plain probability per bit ("1e-6").

HTTP on --control PATH, a unix socket of mode 0600 that only its owner
(and root) may use, printed on stdout as "listening on unix:PATH" and
removed at exit; /metrics and /healthz alone also on --listen ADDR (TCP,
printed as "listening on ADDR"), which never serves /config:
  GET  /config   the configuration in force, as JSON whose "config" member
                 has the flag names as keys ({"delay":"20ms","loss":"1%",...})
  PUT  /config   a new configuration (same JSON keys; keys left out take
                 their defaults); applies to packets arriving after it and
                 answers with the time it took effect (effective_at)
  GET  /metrics  Prometheus metrics; GET /healthz  "ok"

Metrics:
  protolab_linkem_packets_total{link,action}   packets; action = passed|dropped|
                                               corrupted|duplicated|reordered|overflow
  protolab_linkem_received_packets_total{link} packets read from the queue
  protolab_linkem_added_delay_seconds{link}    histogram, seconds (10us..1s)
  protolab_linkem_held_packets{link}           packets held now
  protolab_linkem_batch_accepted_packets_total{link}  passed by one batch verdict
  protolab_linkem_config_changes_total{link}   PUT /config applied
  protolab_linkem_config_generation{link}      generation in force
  protolab_linkem_errors_total{link,kind}      verdict|inject|skipped failures
  protolab_linkem_kernel_queue_packets{link}   packets in the kernel queue
  protolab_linkem_kernel_dropped_packets_total{link,cause}  queue_full|socket_full
  protolab_linkem_busy_polled_packets_total{link}           read while busy polling
  protolab_agent_build_info{version,revision,goversion}      always 1

SIGTERM or SIGINT: every held packet is released at once, the queue is
drained and unbound, exit 0 (with --queue-bypass traffic then flows
unimpaired).

Flags:
`

// run is main without the process exit, for tests. It returns 0 after a
// clean stop, 1 on a runtime error, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "bench" {
		return runBench(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("protolab-linkem", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg linkem.Config
	fs.Var(&cfg.Delay, "delay", "constant delay added to every packet: a duration with a unit, e.g. 20ms")
	fs.Var(&cfg.Jitter, "jitter", "jitter scale: a duration; delay+jitter*t, t drawn from --distribution (uniform: +-jitter; normal: sd jitter)")
	fs.StringVar(&cfg.Distribution, "distribution", linkem.DistUniform, "jitter distribution: uniform | normal | pareto | paretonormal (netem's tables)")
	fs.BoolVar(&cfg.KeepOrder, "keep-order", false, "never let jitter reorder packets: a packet is not released before one that arrived earlier (the explicit --reorder still reorders)")
	fs.Var(&cfg.Loss, "loss", "random loss: percentage of packets dropped, e.g. 1.5 or 1.5%")
	fs.Var(&cfg.LossGE, "loss-ge", "Gilbert-Elliott loss, netem's 'loss gemodel p r 1-h 1-k': \"p[,r[,1-h[,1-k]]]\" percentages; p good->bad, r bad->good (default 100-p), 1-h loss in bad (default 100), 1-k loss in good (default 0)")
	fs.Var(&cfg.Reorder, "reorder", "percentage of packets sent at once, without the delay (needs --delay), e.g. 25%")
	fs.Var(&cfg.Corrupt, "corrupt", "percentage of packets that get one random bit flipped after their IP header (transport checksums then fail)")
	fs.Var(&cfg.BER, "ber", "bit error rate per bit, e.g. 1e-6: a packet of L bytes is corrupted (one bit flipped) with probability 1-(1-ber)^(8L); exclusive with --corrupt")
	fs.Var(&cfg.Duplicate, "duplicate", "percentage of packets sent twice; the copy is injected through a raw socket and has its own loss/corruption/delay")
	fs.IntVar(&cfg.Limit, "limit", linkem.DefaultLimit, fmt.Sprintf("most packets held at once (1..%d); arrivals beyond it are dropped and counted as overflow", linkem.MaxLimit))
	queue := fs.Uint("queue", 0, "NFQUEUE number to bind (0..65535), as in the rule's --queue-num")
	name := fs.String("name", "", "link label of the metrics (default \"q<queue>\")")
	seed := fs.Uint64("seed", 0, "seed of the random decisions (default: a random seed, shown in GET /config and the log)")
	control := fs.String("control", "", "unix socket to create for /config, /metrics and /healthz (mode 0600: only this user and root can reconfigure the link); nothing may exist at the path")
	listen := fs.String("listen", "", "TCP address (host:port) for /metrics and /healthz only, e.g. 127.0.0.1:0 (port 0 picks a free one); default: none")
	netns := fs.String("netns", "", "work in the network namespace at this path (/run/netns/NAME, /proc/PID/ns/net) instead of the process's own; the TCP listener stays in the process's namespace")
	busyPoll := fs.Duration("busy-poll", 0, "after a packet, keep polling the queue for this long (e.g. 300us; at most 10ms) instead of sleeping until the next: cuts the wake-up delay of each packet (tens of us on a VM) at the cost of a busy CPU while packets keep coming, and with GOMAXPROCS=1 HTTP requests (config changes, scrapes) may then wait up to ~10ms; 0 = off")
	logLevel := fs.String("log-level", "info", "log level: debug | info | warn | error")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Run 'protolab-linkem --help' for the flags and their units.") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(fs.Output(), usageHeader)
			fs.PrintDefaults()
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "protolab-linkem: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "protolab-linkem %s (revision %s, %s)\n", version, revision, runtime.Version())
		return 0
	}
	if *queue > 65535 {
		fmt.Fprintf(stderr, "protolab-linkem: --queue %d is out of range 0..65535\n", *queue)
		return 2
	}
	if *busyPoll < 0 || *busyPoll > 10*time.Millisecond {
		fmt.Fprintf(stderr, "protolab-linkem: --busy-poll %v is out of range 0..10ms\n", *busyPoll)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "protolab-linkem: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	cfg = cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "protolab-linkem: invalid configuration:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		var b [8]byte
		_, _ = rand.Read(b[:])
		*seed = binary.LittleEndian.Uint64(b[:])
	}
	if *name == "" {
		*name = fmt.Sprintf("q%d", *queue)
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	err := linkem.Run(ctx, cfg, linkem.RunOptions{StartOptions: linkem.StartOptions{Queue: uint16(*queue),
		Name: *name, Seed: *seed, NetNS: *netns, BusyPoll: *busyPoll, Logger: logger}, Control: *control, Listen: *listen, Version: version, Revision: revision}, stdout)
	if err != nil {
		return 1
	}
	return 0
}
