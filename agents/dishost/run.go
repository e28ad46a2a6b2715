package dishost

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"protolab/agents/internal/cli"
	"protolab/agents/internal/measure"
	"protolab/agents/metrics"
)

// ExtraWorkEnv names the test-only slowdown knob (Receiver.ExtraWork).
const ExtraWorkEnv = "PROTOLAB_TEST_EXTRA_WORK"

// Options is one run of the host as protolab-dishost's flags give it.
// Fields marked send or recv matter to that role only.
type Options struct {
	Role     string // "send" or "recv"
	Plan     Plan
	Port     int
	Iface    string
	Listen   string // address for /metrics; empty: none
	Duration time.Duration
	Syntax   string
	Version  string
	Revision string

	// send
	Rate          float64
	Arrival       string
	Entities      int
	Size          int
	Heartbeat     bool
	Articulations int
	Mix           string
	Dest          string
	Site, App     uint
	Seed          int64
	TTL           int

	// recv
	Share      float64
	Local      bool
	Work       bool
	Calibrate  time.Duration
	CgroupRoot string
	ReadyFile  string
	Drain      time.Duration
}

// Run serves the metrics (when o.Listen is set) and runs the send or recv
// role until o.Duration is over or ctx ends, and gives the JSON summary to
// print. A *cli.UsageError is a bad setting (exit 2); any other error a
// failed run (exit 1).
func Run(ctx context.Context, o Options, stderr io.Writer) (map[string]any, error) {
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	col := &Collector{}
	if o.Listen != "" {
		reg, err := metrics.AgentRegistry(metrics.Config{Version: o.Version, Revision: o.Revision}, "dis", col)
		if err != nil {
			return nil, cli.Usagef("%v", err)
		}
		go func() { _ = metrics.ListenAndServe(ctx, o.Listen, metrics.NewHandler(reg, logger), logger) }()
	}
	if o.Role == "send" {
		return runSend(ctx, o, col)
	}
	return runRecv(ctx, o, col)
}

func runSend(ctx context.Context, o Options, col *Collector) (map[string]any, error) {
	var err error
	m := DefaultMix()
	if o.Mix != "" {
		if m, err = ParseMix(o.Mix); err != nil {
			return nil, cli.Usagef("%v", err)
		}
	}
	gen, err := NewGenerator(GenConfig{Plan: o.Plan, Entities: o.Entities, Size: o.Size, Mix: m,
		Site: uint16(o.Site), App: uint16(o.App), Seed: o.Seed, Syntax: o.Syntax,
		Articulations: o.Articulations, NoHeartbeat: !o.Heartbeat})
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	gen.Clock = time.Now
	start := time.Now()
	pacer, err := measure.NewPacer(o.Rate, measure.Arrival(o.Arrival), start, o.Seed+1)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	s := &Sender{Gen: gen, Pacer: pacer, Port: o.Port, Iface: o.Iface, TTL: o.TTL}
	if o.Dest != "" {
		if s.Dest, err = netip.ParseAddr(o.Dest); err != nil {
			return nil, cli.Usagef("--dest %q: %v", o.Dest, err)
		}
	}
	col.Sender = s
	rctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	if err := s.Run(rctx); err != nil {
		return nil, err
	}
	el := time.Since(start).Seconds()
	p, b, e := s.Snapshot()
	rep := SendReport(o.Plan, o.Size, gen, p, b, e, el)
	first, last := s.Span()
	AddSpan(rep, "send", first, last)
	return rep, nil
}

func runRecv(ctx context.Context, o Options, col *Collector) (map[string]any, error) {
	if o.Share <= 0 || o.Share > 1 {
		return nil, cli.Usagef("--share must be in (0, 1]")
	}
	if err := CheckSyntax(o.Syntax); err != nil {
		return nil, cli.Usagef("--syntax: %v", err)
	}
	plan := o.Plan
	r := &Receiver{Plan: plan, Joined: Joined(plan.Groups, o.Share), Port: o.Port, Iface: o.Iface, Local: o.Local,
		Syntax: o.Syntax}
	if v := os.Getenv(ExtraWorkEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, cli.Usagef("%s=%q: want a count of hashing rounds per PDU", ExtraWorkEnv, v)
		}
		r.ExtraWork = n
		slog.Warn("test-only slowdown: extra hashing per accepted PDU", "env", ExtraWorkEnv, "rounds", n)
	}
	col.Receiver = r
	var wl *WorkLoop
	var wg sync.WaitGroup
	baseline, idle := math.NaN(), math.NaN()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if o.Work {
		wl = &WorkLoop{}
		wg.Add(1)
		go func() { defer wg.Done(); wl.Run(wctx) }()
		time.Sleep(100 * time.Millisecond) // let the loop's thread start
		c0, l0, t0 := cgroupCPU(o.CgroupRoot), wl.ThreadCPU(), time.Now()
		baseline = wl.Rate(ctx, o.Calibrate)
		// The container's CPU besides the loop with no traffic (its agent, this runtime): the floor
		// under cpu_cgroup_ratio.
		idle = IdleCPURatio(c0, cgroupCPU(o.CgroupRoot), l0, wl.ThreadCPU(), time.Since(t0).Seconds())
		col.Work, col.Baseline = wl, func() float64 { return baseline }
	}
	// SIGUSR1: the sender is done; drain, then end (the work loop's ctx lives on). Caught from before the ready
	// file exists, so that an orchestrator's early signal cannot kill the receiver.
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGUSR1)
	defer signal.Stop(done)
	sockets, err := r.Listen()
	if err != nil {
		return nil, fmt.Errorf("%v (joined on %d socket(s); raise net.ipv4.igmp_max_memberships in this network namespace)", err, sockets)
	}
	if o.ReadyFile != "" {
		if err := os.WriteFile(o.ReadyFile, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
			return nil, err
		}
	}
	rec := receive(ctx, o, r, wl, done)
	rec.Sockets = sockets
	if wl != nil {
		// The loop again with no traffic, as long as it was calibrated.
		after := wl.Rate(ctx, o.Calibrate)
		wcancel()
		wg.Wait()
		rec.Work = &WorkRates{Baseline: baseline, After: after, Idle: idle}
	}
	return RecvReport(rec), nil
}

// receive runs r for o.Duration (or o.Drain after done fires) with the CPU
// sampled every 100 ms, and gives the run but for Sockets and Work.
func receive(ctx context.Context, o Options, r *Receiver, wl *WorkLoop, done <-chan os.Signal) RecvRun {
	// CPU samples every 100 ms, so that the CPU figures cover the window in
	// which datagrams arrived (first..last), not the idle time around it.
	_, cgOK := CgroupCPU(o.CgroupRoot)
	take := func() CPUSample {
		s := CPUSample{T: time.Now()}
		s.Cgroup, _ = CgroupCPU(o.CgroupRoot)
		if wl != nil {
			s.Iters, s.Loop = wl.Iterations(), wl.ThreadCPU()
		}
		return s
	}
	var samples []CPUSample
	var smu sync.Mutex
	drops0, dropsErr := ReadKernelDrops()
	if dropsErr != nil {
		slog.Warn("the namespace's UDP and IP reassembly counters are not readable: not reported", "err", dropsErr)
	}
	t0 := time.Now()
	rctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	go func() {
		select {
		case <-done:
			slog.Info("sender done: draining", "drain", o.Drain)
			select {
			case <-time.After(o.Drain):
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
	rec := RecvRun{Plan: o.Plan, Joined: r.Joined, Elapsed: el, Summary: r.Snapshot(), Syntax: o.Syntax,
		Samples: samples, CgroupOK: cgOK, Start: t0, End: t1}
	if drops1, err := ReadKernelDrops(); dropsErr == nil && err == nil {
		d := drops1.Minus(*drops0)
		rec.Drops = &d
	}
	return rec
}

// cgroupCPU is the container's CPU time so far, or -1 when it cannot be read.
func cgroupCPU(root string) time.Duration {
	if d, ok := CgroupCPU(root); ok {
		return d
	}
	return -1
}
