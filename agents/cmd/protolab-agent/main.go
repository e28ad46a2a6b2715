// Command protolab-agent is PID 1 (under docker --init) of every protolab
// lab container. It exports the container's cgroup CPU usage and its
// data-plane interface counters as Prometheus metrics on /metrics, and
// answers /healthz. See package protolab/agents/metrics for the collectors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

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

const usageHeader = `Usage: protolab-agent [flags]

Serves Prometheus metrics of this lab node on http://<listen>/metrics and a
liveness probe on /healthz (200 "ok"). Everything is read at scrape time.

Metrics (units in the names):
  protolab_cpu_seconds_total                  cgroup CPU time, seconds
  protolab_cpu_quota_cores                    cgroup CPU budget, cores (0 = unlimited)
  protolab_cpu_throttled_seconds_total        time throttled by the quota, seconds
  protolab_interface_{receive,transmit}_bytes_total{interface}    bytes
  protolab_interface_{receive,transmit}_packets_total{interface}  packets
  protolab_interface_{receive,transmit}_drops_total{interface}    packets
  protolab_interface_{receive,transmit}_errors_total{interface}   errors
  protolab_agent_build_info{version,revision,goversion}           always 1
  protolab_scrape_collector_success{collector}                    1 ok, 0 failed
  protolab_scrape_collector_duration_seconds{collector}           seconds

Flags:
`

// run is main without the process exit, for tests. It returns the exit
// code: 0 after a clean shutdown on SIGTERM/SIGINT (or ctx ending), 1 on a
// runtime error, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("protolab-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":9100", "TCP address (host:port) to serve /metrics and /healthz on")
	mgmt := fs.String("mgmt-interface", "eth0", "comma-separated names of management (non data-plane) network interfaces to leave out of the interface metrics; lo is always left out")
	cgroupRoot := fs.String("cgroup-root", metrics.DefaultCgroupRoot, "directory where the node's cgroup filesystem (v1 or v2) is mounted; CPU usage is read from cpuacct.usage (nanoseconds) or cpu.stat usage_usec (microseconds)")
	procPath := fs.String("proc", metrics.DefaultProcPath, "directory where procfs is mounted; interface counters are read from <proc>/net/dev (bytes, packets)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "protolab-agent: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "protolab-agent %s (revision %s, %s)\n", version, revision, runtime.Version())
		return 0
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	set, err := metrics.New(metrics.Config{
		CgroupRoot:     *cgroupRoot,
		ProcPath:       *procPath,
		MgmtInterfaces: metrics.ParseInterfaceList(*mgmt),
		Version:        version,
		Revision:       revision,
		Logger:         logger,
	})
	if err != nil {
		logger.Error("setting up collectors", "err", err)
		return 1
	}
	reg, err := metrics.NewRegistry(set)
	if err != nil {
		logger.Error("setting up registry", "err", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger.Info("starting protolab-agent", "version", version, "revision", revision,
		"collectors", strings.Join(set.Names(), ","), "mgmt_interfaces", *mgmt,
		"cgroup_root", *cgroupRoot, "proc", *procPath)
	if err := metrics.ListenAndServe(ctx, *listen, metrics.NewHandler(reg, logger), logger); err != nil {
		logger.Error("agent stopped", "err", err)
		return 1
	}
	logger.Info("stopped cleanly")
	return 0
}
