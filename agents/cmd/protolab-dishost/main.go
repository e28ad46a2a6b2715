// Command protolab-dishost is the simulated DIS host of protolab: `send`
// generates DIS PDUs for N entities (each behind the thesis's 2-byte message
// address) onto IP multicast groups, `recv` joins a share of the groups,
// decodes what arrives and measures delay, loss, rates and CPU. See package
// protolab/agents/dishost. At the end each prints one JSON summary line on
// stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"protolab/agents/dis"
	"protolab/agents/dishost"
	"protolab/agents/internal/cli"
	"protolab/agents/metrics"
	"protolab/agents/syntax"
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

const usage = `Usage: protolab-dishost send|recv [flags]

  send   generate messages (2-byte message address + DIS PDU) at --rate for
         --entities entities onto --groups multicast groups (or --dest)
  recv   join --share of the groups, receive for --duration, report

Prints one JSON summary line on stdout when --duration is over (or on
SIGINT/SIGTERM). A receiver also ends --drain after SIGUSR1 ("the sender is
done"): an orchestrator ties the receive window to the sender's end that
way, with --duration as the cap. Metrics (protolab_dis_*) on --listen when
given.

Flags:
`

type common struct {
	groups, perGroup, port int
	base, iface, listen    string
	duration               time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "send" && args[0] != "recv") {
		if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
			fmt.Fprintf(stdout, "protolab-dishost %s (revision %s, %s)\n", version, revision, runtime.Version())
			return 0
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	role := args[0]
	fs := flag.NewFlagSet("protolab-dishost "+role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	fs.IntVar(&c.groups, "groups", 1, "multicast groups of the exercise (packet addresses 0..groups-1)")
	fs.IntVar(&c.perGroup, "per-group", dis.MessagesPerPacketAddress, "message addresses per packet address (thesis: 32; groups x this <= 65536)")
	fs.IntVar(&c.port, "port", dishost.DefaultPort, "UDP port")
	fs.StringVar(&c.base, "base", dishost.DefaultBase.String(), "multicast group of packet address 0")
	fs.StringVar(&c.iface, "iface", "", "interface for multicast (default: the routing table's)")
	fs.StringVar(&c.listen, "listen", "", "address for /metrics (e.g. :9102); empty: none")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send / receive")
	syn := fs.String("syntax", "raw", "transfer syntax of the PDUs, both ends alike: "+strings.Join(syntax.Names(), " | ")+" (see below)")
	// send
	rate := fs.Float64("rate", 1000, "send: messages (= packets) per second")
	arrival := fs.String("arrival", "constant", "send: constant | poisson")
	entities := fs.Int("entities", 100, "send: simulated entities")
	size := fs.Int("size", 0, fmt.Sprintf("send: UDP payload bytes, %d..%d (0: the PDU's own size)", dishost.MinSize, dishost.MaxSize))
	heartbeat := fs.Bool("heartbeat", true, "send: an Entity State PDU when an entity's 5 s heartbeat is due (false: only the mix's types)")
	articulations := fs.Int("articulations", 0, "send: articulation parameters per Entity State PDU, 0..255 (4 integers and an 8-octet value each)")
	mix := fs.String("mix", "", "send: PDU mix, e.g. entity_state=92,fire=3,detonation=3,collision=2 (the default)")
	dest := fs.String("dest", "", "send: unicast destination instead of the groups (e.g. 127.0.0.1)")
	site := fs.Uint("site", 1, "send: DIS site number")
	app := fs.Uint("app", 1, "send: DIS application number")
	seed := fs.Int64("seed", 1, "send: random seed (mix, Poisson arrivals)")
	ttl := fs.Int("ttl", 1, "send: multicast TTL")
	// recv
	share := fs.Float64("share", 1, "recv: share of the groups to join, 0..1 (groups 0..round(share x groups)-1)")
	local := fs.Bool("local", false, "recv: join nothing, take unicast datagrams (loopback tests)")
	work := fs.Bool("work", false, "recv: run the thesis's busy work loop (calibrated before joining) to measure the CPU networking takes")
	calibrate := fs.Duration("calibrate", 2*time.Second, "recv: work loop calibration time before joining")
	cgroupRoot := fs.String("cgroup-root", metrics.DefaultCgroupRoot, "recv: cgroup filesystem of this container")
	readyFile := fs.String("ready-file", "", "recv: write this process's pid into this file once every group is joined (for orchestrators)")
	drain := fs.Duration("drain", time.Second, "recv: after SIGUSR1, receive this much longer, then report")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			fs.PrintDefaults()
			fmt.Fprint(stderr, "\ntransfer syntaxes (--syntax; agents/syntax, the ASN.1 module in agents/syntax/asn1/DIS.asn):\n"+syntax.Describe())
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "protolab-dishost %s: "+format+"\n", append([]any{role}, a...)...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	base, err := netip.ParseAddr(c.base)
	if err != nil {
		return bad("--base %q: %v", c.base, err)
	}
	plan := dishost.Plan{Groups: c.groups, PerGroup: c.perGroup, Base: base}
	if err := plan.Validate(); err != nil {
		return bad("%v", err)
	}
	if *drain < 0 {
		return bad("--drain must be >= 0")
	}
	if c.duration <= 0 {
		return bad("--duration must be > 0")
	}
	o := dishost.Options{Role: role, Plan: plan, Port: c.port, Iface: c.iface, Listen: c.listen, Duration: c.duration,
		Syntax: *syn, Version: version, Revision: revision,
		Rate: *rate, Arrival: *arrival, Entities: *entities, Size: *size, Heartbeat: *heartbeat,
		Articulations: *articulations, Mix: *mix, Dest: *dest, Site: *site, App: *app, Seed: *seed, TTL: *ttl,
		Share: *share, Local: *local, Work: *work, Calibrate: *calibrate, CgroupRoot: *cgroupRoot,
		ReadyFile: *readyFile, Drain: *drain}
	rep, err := dishost.Run(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-dishost %s: %v\n", role, err)
		return cli.ExitCode(err)
	}
	return emit(stdout, rep)
}

// emit prints the one JSON summary line and gives the exit code.
func emit(w io.Writer, v map[string]any) int {
	if err := dishost.WriteReport(w, v); err != nil {
		return 1
	}
	return 0
}
