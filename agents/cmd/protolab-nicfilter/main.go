// Command protolab-nicfilter models the receive address filter of each lab
// host's NIC at the bridge port toward the host: frames the modelled NIC
// would not accept are dropped at that port's egress, before the host's
// kernel pays for them. See package protolab/agents/nicfilter.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"protolab/agents/internal/cli"
	"protolab/agents/metrics"
	"protolab/agents/nicfilter"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = metrics.DefaultVersion
	revision = metrics.DefaultRevision
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usageHeader = `Usage: protolab-nicfilter run --port BRIDGEPORT --pid PID --ifname IFNAME [--mode MODE]
                          [--port ... --pid ... --ifname ... [--mode ...]]... [flags]
       protolab-nicfilter run --config FILE [flags]

Models each host's NIC receive filter at the egress of the bridge port
toward the host (tcx, root network namespace), so frames the NIC would not
accept never reach the host's kernel. Each --port starts a host; the
--pid, --ifname and --mode after it are that host's (a --mode before the
first --port is the default of all). --config FILE is a JSON list of
{"port": "...", "pid": N, "ifname": "...", "mode": "..."} instead.

Modes: perfect     unicast only for the interface's address, multicast only
                   for the joined link-layer addresses (today's NICs)
       hash64      unicast as perfect, multicast whose CRC bin is set in the
                   64-bin logical address filter of the joined addresses
                   (AMD LANCE / PCnet, the 1990s hosts)
       promiscuous everything
Broadcast always passes; the host's IFF_PROMISC / IFF_ALLMULTI open the
filter as a driver would. The joined addresses, the interface's address and
flags are read every --poll from /proc/PID/net/dev_mcast and the host's
network namespace.

Prints "ready" on stdout once every host is attached. HTTP on --control
PATH (a unix socket, mode 0600, removed at exit):
  GET /stats    JSON: per host its mode, address, joined groups, filter mask
                and counters {passed, dropped_unicast, dropped_multicast}
                each {packets, bytes}
  POST /refresh read every host's state and program its filter now, then
                answer as /stats: a real NIC's filter is programmed as the
                host joins, so an orchestrator calls this once its receivers
                have joined, before their traffic starts (the poll alone
                lags a join by up to --poll)
  GET /metrics  Prometheus:
    protolab_nicfilter_packets_total{port,verdict}   verdict = passed|dropped_unicast|dropped_multicast
    protolab_nicfilter_bytes_total{port,verdict}     bytes (frames without FCS)
    protolab_nicfilter_joined_groups{port}           link-layer groups joined
    protolab_nicfilter_poll_errors_total{port}       failed reads of the host's state
  GET /healthz

SIGTERM or SIGINT: detach (the attachments are not pinned), exit 0.
Exit codes: 0 clean stop, 1 runtime error, 2 bad usage.

Flags:
`

// hostsFlag collects the hosts: --port starts one, --pid/--ifname/--mode
// set the last one's.
type hostsFlag struct {
	hosts       []nicfilter.HostSpec
	defaultMode string
}

func (h *hostsFlag) last(name string) (*nicfilter.HostSpec, error) {
	if len(h.hosts) == 0 {
		return nil, fmt.Errorf("--%s before any --port", name)
	}
	return &h.hosts[len(h.hosts)-1], nil
}

type hostField struct {
	h    *hostsFlag
	name string
}

func (f hostField) String() string { return "" }

func (f hostField) Set(v string) error {
	if f.name == "port" {
		f.h.hosts = append(f.h.hosts, nicfilter.HostSpec{Port: v})
		return nil
	}
	if f.name == "mode" && len(f.h.hosts) == 0 {
		f.h.defaultMode = v
		return nil
	}
	last, err := f.h.last(f.name)
	if err != nil {
		return err
	}
	switch f.name {
	case "pid":
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a process id (a positive integer)", v)
		}
		last.PID = n
	case "ifname":
		last.IfName = v
	case "mode":
		last.Mode = v
	}
	return nil
}

type usageError struct{ error }

// parse reads the command line: the hosts, checked as far as can be without
// privileges (the pid exists, the port exists).
func parse(args []string, stderr io.Writer) (hosts []nicfilter.HostSpec, control string, poll time.Duration, level slog.Level, err error) {
	if len(args) == 0 || (args[0] != "run" && !strings.HasPrefix(args[0], "-")) {
		return nil, "", 0, 0, usageError{errors.New("want the subcommand run (see --help)")}
	}
	if args[0] == "run" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("protolab-nicfilter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := &hostsFlag{defaultMode: "perfect"}
	fs.Var(hostField{hf, "port"}, "port", "bridge port toward a host (root network namespace), e.g. the veth peer of h1-eth0; starts a host")
	fs.Var(hostField{hf, "pid"}, "pid", "a process in the host's network namespace (the container's init)")
	fs.Var(hostField{hf, "ifname"}, "ifname", "the host's interface on that link, in its namespace, e.g. h1-eth0")
	fs.Var(hostField{hf, "mode"}, "mode", "NIC filter: "+strings.Join(nicfilter.Modes(), " | ")+" (default perfect)")
	config := fs.String("config", "", "JSON file listing the hosts, instead of --port ...")
	fs.StringVar(&control, "control", "", "unix socket to create for /stats, /metrics and /healthz (mode 0600); nothing may exist at the path; default: none")
	fs.DurationVar(&poll, "poll", 100*time.Millisecond, "how often the hosts' multicast lists, addresses and flags are read (10ms..10s)")
	logLevel := fs.String("log-level", "info", "log level: debug | info | warn | error")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), "Run 'protolab-nicfilter --help' for the flags.") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usageHeader)
			fs.PrintDefaults()
			return nil, "", 0, 0, flag.ErrHelp
		}
		return nil, "", 0, 0, usageError{nil}
	}
	if *showVersion {
		return nil, "", 0, 0, errVersion
	}
	if fs.NArg() > 0 {
		return nil, "", 0, 0, usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, "", 0, 0, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", *logLevel)}
	}
	if poll < 10*time.Millisecond || poll > 10*time.Second {
		return nil, "", 0, 0, usageError{fmt.Errorf("--poll %v is out of range 10ms..10s", poll)}
	}
	hosts = hf.hosts
	if *config != "" {
		if len(hosts) > 0 {
			return nil, "", 0, 0, usageError{errors.New("--config and --port exclude each other")}
		}
		if hosts, err = readConfig(*config); err != nil {
			return nil, "", 0, 0, usageError{err}
		}
	}
	if len(hosts) == 0 {
		return nil, "", 0, 0, usageError{errors.New("no host: give --port BRIDGEPORT --pid PID --ifname IFNAME, or --config FILE")}
	}
	var errs []error
	ports := map[string]bool{}
	for i := range hosts {
		h := &hosts[i]
		if h.Mode == "" {
			h.Mode = hf.defaultMode
		}
		errs = append(errs, checkHost(*h, ports))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", 0, 0, usageError{err}
	}
	return hosts, control, poll, level, nil
}

var errVersion = errors.New("version")

func readConfig(path string) ([]nicfilter.HostSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var hosts []nicfilter.HostSpec
	if err := dec.Decode(&hosts); err != nil {
		return nil, fmt.Errorf("--config %s: want a JSON list of {\"port\", \"pid\", \"ifname\", \"mode\"}: %w", path, err)
	}
	return hosts, nil
}

func checkHost(h nicfilter.HostSpec, ports map[string]bool) error {
	var errs []error
	name := h.Port
	if h.Port == "" {
		errs = append(errs, errors.New("missing port"))
		name = "(no port)"
	} else if ports[h.Port] {
		errs = append(errs, fmt.Errorf("port %s given twice", h.Port))
	} else if _, err := nicfilter.IfIndex(h.Port); err != nil {
		errs = append(errs, fmt.Errorf("no interface %s in this network namespace: %w", h.Port, err))
	}
	ports[h.Port] = true
	if _, err := nicfilter.ParseMode(h.Mode); err != nil {
		errs = append(errs, err)
	}
	if h.PID <= 0 {
		errs = append(errs, fmt.Errorf("missing or bad --pid (%d): want the pid of a process in the host's network namespace", h.PID))
	} else if _, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", h.PID)); errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("pid %d: no such process", h.PID))
	} else if err != nil {
		errs = append(errs, fmt.Errorf("pid %d: its network namespace: %w", h.PID, err))
	}
	if h.IfName == "" {
		errs = append(errs, errors.New("missing --ifname: the host's interface, e.g. h1-eth0"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("host %s: %w", name, err)
	}
	return nil
}

// run is main without the process exit, for tests. It returns 0 after a
// clean stop, 1 on a runtime error, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	specs, control, poll, level, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errVersion):
		fmt.Fprintf(stdout, "protolab-nicfilter %s (revision %s, %s)\n", version, revision, runtime.Version())
		return 0
	case err != nil:
		if ue, ok := err.(usageError); ok && ue.error == nil {
			return 2 // the flag package said why
		}
		fmt.Fprintf(stderr, "protolab-nicfilter: %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	err = nicfilter.Run(ctx, specs, nicfilter.RunOptions{Control: control, Poll: poll, Version: version, Revision: revision,
		Logger: logger}, stdout)
	if cli.ExitCode(err) == 2 {
		fmt.Fprintf(stderr, "protolab-nicfilter: %v\n", err)
	}
	return cli.ExitCode(err)
}
