package nicfilter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"protolab/agents/internal/cli"
	"protolab/agents/linkem"
	"protolab/agents/metrics"
)

// RunOptions configure Run.
type RunOptions struct {
	Control  string        // unix socket for /stats, /refresh, /metrics and /healthz; "" = none
	Poll     time.Duration // how often each host's state is read
	Version  string
	Revision string
	Logger   *slog.Logger
}

// Run is protolab-nicfilter's work after its flags: it attaches a filter
// for every host of specs, serves HTTP on o.Control, prints "ready" on
// stdout and programs every filter with its host's state every o.Poll until
// SIGTERM or SIGINT (or ctx) ends it: then it detaches and returns nil. A
// host that cannot be opened is a *cli.UsageError (exit 2); any other
// failure is logged on o.Logger and returned (exit 1).
func Run(ctx context.Context, specs []HostSpec, o RunOptions, stdout io.Writer) error {
	logger := o.Logger
	hosts, err := attach(specs, logger)
	defer func() {
		for _, h := range hosts {
			h.close()
		}
	}()
	if err != nil {
		return err
	}

	reg, err := metrics.AgentRegistry(metrics.Config{Version: o.Version, Revision: o.Revision, Logger: logger},
		"nicfilter", collector{hosts})
	if err != nil {
		logger.Error("setting up metrics", "err", err)
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srvErr := make(chan error, 1)
	srvCtx, stopSrv := context.WithCancel(context.Background())
	defer stopSrv()
	var ln net.Listener
	if o.Control != "" {
		if ln, err = linkem.ListenControl(o.Control, logger); err != nil {
			logger.Error("listen", "err", err)
			return err
		}
		defer ln.Close()
		h := statsHandler(hosts, metrics.NewHandler(reg, logger))
		go func() { srvErr <- metrics.Serve(srvCtx, ln, h, logger) }()
	}
	fmt.Fprintln(stdout, "ready")
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}

	failed := poll(ctx, hosts, o.Poll, srvErr, logger)
	stopSrv()
	if ln != nil && failed == nil {
		if err := <-srvErr; err != nil {
			logger.Warn("http shutdown", "err", err)
		}
	}
	if failed == nil {
		logger.Info("stopped cleanly")
	}
	return failed
}

// attach opens every host of specs, loads its filter, programs it and
// attaches it; it gives the hosts so far (to close) also on an error.
func attach(specs []HostSpec, logger *slog.Logger) ([]*host, error) {
	var hosts []*host
	var err error
	for _, sp := range specs {
		mode, _ := ParseMode(sp.Mode)
		h := &host{spec: sp, mode: mode}
		hosts = append(hosts, h)
		if h.nic, err = OpenHost(sp.PID, sp.IfName); err != nil {
			return hosts, cli.Usagef("host %s: %v", sp.Port, err)
		}
		if h.filter, err = New(); err != nil {
			logger.Error("loading", "port", sp.Port, "err", err)
			return hosts, err
		}
		if err := h.refresh(); err != nil {
			logger.Error("reading the host's filter state", "port", sp.Port, "pid", sp.PID, "ifname", sp.IfName, "err", err)
			return hosts, err
		}
		if h.link, err = h.filter.AttachEgress(sp.Port); err != nil {
			logger.Error("attaching", "port", sp.Port, "err", err)
			return hosts, err
		}
		st := h.filter.State()
		logger.Info("attached", "port", sp.Port, "pid", sp.PID, "ifname", sp.IfName, "mode", mode,
			"mac", net.HardwareAddr(st.MAC[:]).String(), "joined", len(st.Joined))
	}
	return hosts, nil
}

// poll refreshes every host every period until ctx ends (nil) or the HTTP
// server fails (its error).
func poll(ctx context.Context, hosts []*host, period time.Duration, srvErr <-chan error, logger *slog.Logger) error {
	tick := time.NewTicker(period)
	defer tick.Stop()
	lastErr := make([]string, len(hosts))
	for {
		select {
		case <-ctx.Done():
			logger.Info("stopping", "reason", context.Cause(ctx))
			return nil
		case err := <-srvErr:
			logger.Error("http server failed", "err", err)
			return fmt.Errorf("http server failed: %w", err) // never nil, even for a nil err
		case <-tick.C:
			for i, h := range hosts {
				err := h.refresh()
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if msg != lastErr[i] { // log changes only: a vanished host would log 10 times a second
					if err != nil {
						logger.Warn("reading the host's filter state", "port", h.spec.Port, "err", err)
					} else {
						logger.Info("reading the host's filter state works again", "port", h.spec.Port)
					}
					lastErr[i] = msg
				}
			}
		}
	}
}
