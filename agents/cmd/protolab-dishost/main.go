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
	"log/slog"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"protolab/agents/dis"
	"protolab/agents/dishost"
	"protolab/agents/internal/measure"
	"protolab/agents/metrics"
	"protolab/agents/syntax"
)

// extraWorkEnv names the test-only slowdown knob (dishost.Receiver.ExtraWork).
const extraWorkEnv = "PROTOLAB_TEST_EXTRA_WORK"

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
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	set, err := metrics.New(metrics.Config{Version: version, Revision: revision}, "build_info")
	if err != nil {
		return bad("%v", err)
	}
	col := &dishost.Collector{}
	_ = set.Add("dis", col)
	if c.listen != "" {
		reg, err := metrics.NewRegistry(set)
		if err != nil {
			return bad("%v", err)
		}
		go func() { _ = metrics.ListenAndServe(ctx, c.listen, metrics.NewHandler(reg, logger), logger) }()
	}
	if role == "send" {
		m := dishost.DefaultMix()
		if *mix != "" {
			if m, err = dishost.ParseMix(*mix); err != nil {
				return bad("%v", err)
			}
		}
		gen, err := dishost.NewGenerator(dishost.GenConfig{Plan: plan, Entities: *entities, Size: *size, Mix: m,
			Site: uint16(*site), App: uint16(*app), Seed: *seed, Syntax: *syn,
			Articulations: *articulations, NoHeartbeat: !*heartbeat})
		if err != nil {
			return bad("%v", err)
		}
		gen.Clock = time.Now
		start := time.Now()
		pacer, err := measure.NewPacer(*rate, measure.Arrival(*arrival), start, *seed+1)
		if err != nil {
			return bad("%v", err)
		}
		s := &dishost.Sender{Gen: gen, Pacer: pacer, Port: c.port, Iface: c.iface, TTL: *ttl}
		if *dest != "" {
			if s.Dest, err = netip.ParseAddr(*dest); err != nil {
				return bad("--dest %q: %v", *dest, err)
			}
		}
		col.Sender = s
		rctx, cancel := context.WithTimeout(ctx, c.duration)
		defer cancel()
		if err := s.Run(rctx); err != nil {
			fmt.Fprintf(stderr, "protolab-dishost send: %v\n", err)
			return 1
		}
		el := time.Since(start).Seconds()
		p, b, e := s.Snapshot()
		rep := dishost.SendReport(plan, *size, gen, p, b, e, el)
		first, last := s.Span()
		dishost.AddSpan(rep, "send", first, last)
		return emit(stdout, rep)
	}

	// recv
	if *share <= 0 || *share > 1 {
		return bad("--share must be in (0, 1]")
	}
	if err := dishost.CheckSyntax(*syn); err != nil {
		return bad("--syntax: %v", err)
	}
	r := &dishost.Receiver{Plan: plan, Joined: dishost.Joined(plan.Groups, *share), Port: c.port, Iface: c.iface, Local: *local,
		Syntax: *syn}
	if v := os.Getenv(extraWorkEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad("%s=%q: want a count of hashing rounds per PDU", extraWorkEnv, v)
		}
		r.ExtraWork = n
		slog.Warn("test-only slowdown: extra hashing per accepted PDU", "env", extraWorkEnv, "rounds", n)
	}
	col.Receiver = r
	var wl *dishost.WorkLoop
	var wg sync.WaitGroup
	baseline, idle := math.NaN(), math.NaN()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if *work {
		wl = &dishost.WorkLoop{}
		wg.Add(1)
		go func() { defer wg.Done(); wl.Run(wctx) }()
		time.Sleep(100 * time.Millisecond) // let the loop's thread start
		c0, l0, t0 := cgroupCPU(*cgroupRoot), wl.ThreadCPU(), time.Now()
		baseline = wl.Rate(ctx, *calibrate)
		// The container's CPU besides the loop with no traffic (its agent, this runtime): the floor
		// under cpu_cgroup_ratio.
		idle = dishost.IdleCPURatio(c0, cgroupCPU(*cgroupRoot), l0, wl.ThreadCPU(), time.Since(t0).Seconds())
		col.Work, col.Baseline = wl, func() float64 { return baseline }
	}
	// SIGUSR1: the sender is done; drain, then end (the work loop's ctx lives on). Caught from before the ready
	// file exists, so that an orchestrator's early signal cannot kill the receiver.
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGUSR1)
	defer signal.Stop(done)
	sockets, err := r.Listen()
	if err != nil {
		fmt.Fprintf(stderr, "protolab-dishost recv: %v (joined on %d socket(s); raise net.ipv4.igmp_max_memberships in this network namespace)\n", err, sockets)
		return 1
	}
	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
			fmt.Fprintf(stderr, "protolab-dishost recv: %v\n", err)
			return 1
		}
	}
	// CPU samples every 100 ms, so that the CPU figures cover the window in
	// which datagrams arrived (first..last), not the idle time around it.
	_, cgOK := dishost.CgroupCPU(*cgroupRoot)
	take := func() dishost.CPUSample {
		s := dishost.CPUSample{T: time.Now()}
		s.Cgroup, _ = dishost.CgroupCPU(*cgroupRoot)
		if wl != nil {
			s.Iters, s.Loop = wl.Iterations(), wl.ThreadCPU()
		}
		return s
	}
	var samples []dishost.CPUSample
	var smu sync.Mutex
	drops0, dropsErr := dishost.ReadKernelDrops()
	if dropsErr != nil {
		slog.Warn("the namespace's UDP and IP reassembly counters are not readable: not reported", "err", dropsErr)
	}
	t0 := time.Now()
	rctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	go func() {
		select {
		case <-done:
			slog.Info("sender done: draining", "drain", *drain)
			select {
			case <-time.After(*drain):
				cancel()
			case <-rctx.Done():
			}
		case <-rctx.Done():
		}
	}()
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			smu.Lock()
			samples = append(samples, take())
			smu.Unlock()
			select {
			case <-rctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
	r.Run(rctx)
	<-sdone
	samples = append(samples, take())
	t1 := time.Now()
	el := t1.Sub(t0).Seconds()
	rec := dishost.RecvRun{Plan: plan, Joined: r.Joined, Sockets: sockets, Elapsed: el, Summary: r.Snapshot(), Syntax: *syn,
		Samples: samples, CgroupOK: cgOK, Start: t0, End: t1}
	if drops1, err := dishost.ReadKernelDrops(); dropsErr == nil && err == nil {
		d := drops1.Minus(*drops0)
		rec.Drops = &d
	}
	if wl != nil {
		// The loop again with no traffic, as long as it was calibrated.
		after := wl.Rate(ctx, *calibrate)
		wcancel()
		wg.Wait()
		rec.Work = &dishost.WorkRates{Baseline: baseline, After: after, Idle: idle}
	}
	return emit(stdout, dishost.RecvReport(rec))
}

// emit prints the one JSON summary line and gives the exit code.
func emit(w io.Writer, v map[string]any) int {
	if err := dishost.WriteReport(w, v); err != nil {
		return 1
	}
	return 0
}

// cgroupCPU is the container's CPU time so far, or -1 when it cannot be read.
func cgroupCPU(root string) time.Duration {
	if d, ok := dishost.CgroupCPU(root); ok {
		return d
	}
	return -1
}
