package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"protolab/agents/internal/linkembench"
	"protolab/agents/internal/netnstestbed"
	"protolab/agents/linkem/bench"
)

const benchUsage = `Usage: protolab-linkem bench [flags]

Measures, in two throw-away network namespaces (plabt-*) joined by a veth
pair (plt-*), what linkem costs with no impairment configured:
  - the one-way delay it adds to 64-byte UDP datagrams sent at a moderate
    paced rate (p50, p99), against the same path without the NFQUEUE rule,
    and linkem's own read-to-verdict time from its histogram;
  - the packets per second it forwards when one CPU sends as fast as it
    can, at each UDP payload size (default 64 and 1500 bytes; the veth MTU
    is raised so that no size is fragmented), counted at B's veth without
    linkem and by linkem's passed counter with it; plus linkem's CPU use
    and CPU time per packet.
linkem runs as a child process pinned with taskset to one CPU with
GOMAXPROCS=1; the sender and receiver are pinned to another. Needs root.
Everything it creates is removed when it ends (also on SIGINT/SIGTERM).

Flags:
`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("protolab-linkem bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.Options
	var jsonOut bool
	sizes := fs.String("sizes", "64,1500", "comma-separated UDP payload sizes in bytes for the throughput runs")
	fs.DurationVar(&o.Duration, "duration", 2*time.Second, "measured time of each throughput run (a duration)")
	fs.DurationVar(&o.Warmup, "warmup", 300*time.Millisecond, "time each throughput run runs before it is measured")
	fs.IntVar(&o.LatRate, "latency-rate", 10000, "packets per second of the paced latency runs")
	fs.IntVar(&o.LatN, "latency-count", 10000, "packets per latency run")
	fs.IntVar(&o.LinkemCPU, "linkem-cpu", 1, "CPU linkem is pinned to")
	fs.IntVar(&o.LoadCPU, "load-cpu", 0, "CPU the sender and receiver are pinned to")
	fs.BoolVar(&jsonOut, "json", false, "print the results as JSON")
	fs.StringVar(&o.Bin, "linkem-bin", "", "linkem binary to run (default: this executable)")
	fs.UintVar(&o.Queue, "queue", 4242, "NFQUEUE number used inside the throw-away namespace")
	fs.DurationVar(&o.BusyPoll, "busy-poll", 0, "run linkem with this --busy-poll (0 = off, as in a lab)")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Run 'protolab-linkem bench --help' for the flags.") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(fs.Output(), benchUsage)
			fs.PrintDefaults()
			return 0
		}
		return 2
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 16 || n > 8000 {
			fmt.Fprintf(stderr, "protolab-linkem bench: --sizes: %q is not a payload size from 16 to 8000 bytes\n", s)
			return 2
		}
		o.Sizes = append(o.Sizes, n)
	}
	if o.LatRate < 1 || o.LatN < 100 || o.Duration <= 0 || o.Queue > 65535 || o.BusyPoll < 0 || o.BusyPoll > 10*time.Millisecond {
		fmt.Fprintln(stderr, "protolab-linkem bench: --latency-rate must be >= 1, --latency-count >= 100, --duration > 0, --queue <= 65535, --busy-poll 0..10ms")
		return 2
	}
	if o.Bin == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "protolab-linkem bench: %v\n", err)
			return 1
		}
		o.Bin = exe
	}
	if err := netnstestbed.NFQueueUsable(); err != nil {
		fmt.Fprintf(stderr, "protolab-linkem bench: cannot run here: %v\n", err)
		return 1
	}
	res, err := bench.Run(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-linkem bench: %v\n", err)
		return 1
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return 0
	}
	linkembench.WriteText(stdout, linkembench.Setup{LatencyRate: o.LatRate, LatencyCount: o.LatN, Duration: o.Duration,
		BusyPoll: o.BusyPoll, CPUs: runtime.NumCPU()}, res)
	return 0
}
