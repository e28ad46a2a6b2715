package linkem

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"protolab/agents/metrics"
)

// RunOptions configure Run: the queue (StartOptions, whose Logger must be
// set), the listeners and the build's version for the metrics.
type RunOptions struct {
	StartOptions
	Control  string // unix socket for /config, /metrics and /healthz; "" = none
	Listen   string // TCP address for /metrics and /healthz; "" = none
	Version  string
	Revision string
}

// Run is protolab-linkem's work after its flags: it opens the listeners,
// starts emulating cfg on the queue, serves HTTP and prints "listening on
// ..." lines on stdout, until SIGTERM or SIGINT (or ctx) ends it: then it
// releases every held packet and returns nil. A failure is logged on
// o.Logger and returned.
func Run(ctx context.Context, cfg Config, o RunOptions, stdout io.Writer) error {
	logger := o.Logger
	lns, err := o.listen()
	if err != nil {
		return err
	}
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	lk, err := Start(cfg, o.StartOptions)
	if err != nil {
		closeAll()
		logger.Error("starting", "err", err)
		return err
	}
	reg, err := metrics.AgentRegistry(metrics.Config{Version: o.Version, Revision: o.Revision, Logger: logger},
		"linkem", NewCollector(lk.Emulator, lk.Queue))
	if err != nil {
		lk.Stop()
		closeAll()
		logger.Error("setting up metrics", "err", err)
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srvCtx, stopSrv := context.WithCancel(context.Background())
	defer stopSrv()
	srvErr := make(chan error, len(lns))
	for _, ln := range lns {
		h := metrics.NewHandler(reg, logger) // TCP: never /config
		if _, ok := ln.Addr().(*net.UnixAddr); ok {
			h = NewHandler(lk.Emulator, reg, logger)
		}
		go func() { srvErr <- metrics.Serve(srvCtx, ln, h, logger) }()
	}
	cfgJSON, _ := json.Marshal(cfg)
	logger.Info("started", "version", o.Version, "queue", o.Queue, "name", o.Name, "seed", o.Seed,
		"netns", o.NetNS, "busy_poll", o.BusyPoll, "config", string(cfgJSON))
	for _, ln := range lns {
		if a, ok := ln.Addr().(*net.UnixAddr); ok {
			fmt.Fprintf(stdout, "listening on unix:%s\n", a.Name)
		} else {
			fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
		}
	}
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}

	var failed error
	waiting := len(lns)
	select {
	case <-ctx.Done():
		logger.Info("stopping", "reason", context.Cause(ctx))
	case err := <-lk.Fatal():
		logger.Error("queue failed", "err", err)
		failed = fmt.Errorf("queue failed: %w", err) // never nil, even for a nil err
	case err := <-srvErr:
		logger.Error("http server failed", "err", err)
		failed = fmt.Errorf("http server failed: %w", err)
		waiting--
	}
	released, err := lk.Stop()
	if err != nil {
		logger.Warn("stop", "err", err)
	}
	logger.Info("released held packets", "count", released)
	stopSrv()
	for ; waiting > 0; waiting-- {
		if err := <-srvErr; err != nil {
			logger.Warn("http shutdown", "err", err)
		}
	}
	closeAll() // a server that failed left its listener open (and its socket file)
	if failed == nil {
		logger.Info("stopped cleanly")
	}
	return failed
}

// listen opens the listeners: the control socket (full API), the TCP one
// (metrics only). On an error it logs it and closes what it opened.
func (o *RunOptions) listen() ([]net.Listener, error) {
	logger := o.Logger
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if o.Control != "" {
		ln, err := ListenControl(o.Control, logger)
		if err != nil {
			logger.Error("listen", "err", err)
			return nil, err
		}
		lns = append(lns, ln)
	}
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			closeAll()
			logger.Error("listen", "addr", o.Listen, "err", err)
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}
