// Command protolab-converter is the thesis's message-bundle converter and
// the load around it (package protolab/agents/converter): c2, c1 and h are
// the converter's three roles; host is the baseline simulation host without
// a converter; wan is the outside's source and sink at the router. Each
// prints one JSON summary line on stdout at its end and serves Prometheus
// metrics on --listen.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"protolab/agents/converter"
	"protolab/agents/internal/cli"
	"protolab/agents/internal/measure"
	"protolab/agents/metrics"
)

var (
	version  = metrics.DefaultVersion
	revision = metrics.DefaultRevision
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage: protolab-converter c2|c1|h|host|wan [flags]   (--help after the role lists its flags)

  c2    central converter: group database, rebundling for the hosts every
        --interval (broadcast to --hosts), least-used C_1 per packet address,
        low-priority drops above 80 % of --host-capacity; with --outbound,
        every host message also out through a C_1
  c1    router interface: joins what C_2 says with IGMP on --iface, bundles
        the router's IP multicast to C_2, sends C_2's messages outward
  h     host interface with a simulation host's load (--rate messages/s,
        each to --to random other hosts), bundles to and from C_2
  host  the baseline host: the same load, one message per IP multicast packet
  wan   the outside at the router: --rate messages/s over --wan-groups groups

One JSON line on stdout at the end: sent, sent_to, received, reflected,
delay_mean/p50/p99_seconds, added_delay_*, dropped{reason}, bundles, ...
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintf(stdout, "protolab-converter %s (revision %s, %s)\n", version, revision, runtime.Version())
		return 0
	}
	if len(args) == 0 || converter.Roles[args[0]] == nil {
		fmt.Fprint(stderr, usage)
		return 2
	}
	role := args[0]
	fs := flag.NewFlagSet("protolab-converter "+role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &converter.Config{}
	fs.IntVar(&cfg.ID, "id", 1, "host id (1..64) or C_1 number (1..6)")
	fs.StringVar(&cfg.Iface, "iface", "", "interface of the IP multicast (c1, host, wan)")
	fs.IntVar(&cfg.Port, "port", 4000, "this role's UDP port (c2: C_2's; c1: C_1's; h: the hosts' bundles)")
	fs.IntVar(&cfg.MPort, "mport", converter.DefaultMPort, "UDP port of the one-message IP multicast packets")
	base := fs.String("base", "239.193.0.0", "IP multicast group of packet address 0")
	hosts := fs.String("hosts", "6", "host/h/wan: simulation hosts in the exercise; c2: the hosts' broadcast address:port")
	fs.IntVar(&cfg.Size, "size", 150, "bytes per message, its 2-byte address included")
	to := fs.Int("to", 2, "random other hosts each host message goes to")
	wanGroups := fs.Int("wan-groups", 8, "packet addresses of the outside's messages (every host wants them)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "messages/s this process originates (h, host, wan)")
	arrival := fs.String("arrival", "poisson", "inter-arrival times: constant or poisson")
	fs.Float64Var(&cfg.Priority, "priority", 0.1, "share of messages sent with the priority flag")
	fs.DurationVar(&cfg.Interval, "interval", 5*time.Millisecond, "bundling interval")
	fs.IntVar(&cfg.MaxBundle, "max-bundle", converter.DefaultMaxBundle, "largest bundle, bytes")
	fs.IntVar(&cfg.MTU, "mtu", 1500, "c1: largest outward packet, bytes")
	c2 := fs.String("c2", "", "c1, h: C_2's address:port")
	c1s := fs.String("c1", "", "c2: the C_1s' address:port, comma-separated (at most 6)")
	hostCap := fs.String("host-capacity", "10Mbit", "c2: capacity of its link to the hosts")
	c1Cap := fs.String("c1-capacity", "100Mbit", "c2: capacity of its link to the C_1s")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "sending time (h, host, wan) or running time (c1, c2)")
	fs.DurationVar(&cfg.StartDelay, "start-delay", time.Second, "h, host, wan: wait before sending, so every receiver has joined")
	fs.DurationVar(&cfg.Drain, "drain", time.Second, "h, host, wan: keep receiving after sending")
	fs.DurationVar(&cfg.JoinWait, "join-wait", 5*time.Second, "h: how long to wait for C_2's acknowledgements of the joins")
	fs.Int64Var(&cfg.Seed, "seed", 0, "random seed (0: from the host id)")
	fs.BoolVar(&cfg.Reliable, "reliable", false,
		"c2, h: acknowledged delivery of priority messages between C_2 and the hosts (sec. 3.4.2); both ends must have it")
	fs.BoolVar(&cfg.Outbound, "outbound", false,
		"c2: every host data message also toward the outside, through the C_1 that joined its address (else the least used)")
	listen := fs.String("listen", "", "address for /metrics (e.g. :9104); empty: none")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "protolab-converter %s: %s\n", role, fmt.Sprintf(format, a...))
		return 2
	}
	if cfg.Outbound && role != "c2" {
		return bad("--outbound is C_2's (it copies host messages to the C_1s), not %s's", role)
	}
	if cfg.Reliable && role != "c2" && role != "h" {
		return bad("--reliable is for c2 and h (the local network between C_2 and the hosts), not %s", role)
	}
	b, err := netip.ParseAddr(*base)
	if err != nil {
		return bad("--base: %v", err)
	}
	nHosts := 6
	if role == "c2" {
		if cfg.Hosts, err = netip.ParseAddrPort(*hosts); err != nil {
			return bad("--hosts: the hosts' broadcast address:port: %v", err)
		}
	} else if nHosts, err = strconv.Atoi(*hosts); err != nil {
		return bad("--hosts: a number of hosts: %v", err)
	}
	if cfg.Plan, err = converter.NewPlan(nHosts, *to, *wanGroups, b); err != nil {
		return bad("%v", err)
	}
	cfg.Arrival = measure.Arrival(*arrival)
	if cfg.Arrival != measure.Constant && cfg.Arrival != measure.Poisson {
		return bad("--arrival %q: constant or poisson", *arrival)
	}
	if err := cfg.CheckFlags(role, nHosts); err != nil {
		return bad("%v", err)
	}
	if role == "c1" || role == "h" {
		if cfg.C2, err = netip.ParseAddrPort(*c2); err != nil {
			return bad("--c2: C_2's address:port: %v", err)
		}
	}
	if role == "c2" {
		if err := cfg.SetC2Flags(*c1s, *hostCap, *c1Cap); err != nil {
			return bad("%v", err)
		}
	}
	sum, err := converter.Run(ctx, role, cfg, converter.RunOptions{Listen: *listen, Version: version, Revision: revision}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-converter %s: %v\n", role, err)
		return cli.ExitCode(err)
	}
	out, _ := json.Marshal(sum)
	fmt.Fprintln(stdout, string(out))
	return 0
}
