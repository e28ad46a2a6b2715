// Command protolab-spims is protolab's request/response benchmark (package
// protolab/agents/spims) over any registered transport (package
// protolab/agents/transport): `serve` is the responder, `run` executes one
// job (JSON) and prints one JSON result line, `transports` says which
// transports this host can run.
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
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"protolab/agents/metrics"
	"protolab/agents/spims"
	"protolab/agents/transport"
)

var (
	version  = metrics.DefaultVersion
	revision = metrics.DefaultRevision
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // the run failed (no path, a connection broke)
	exitBadInput    = 2 // usage, job or knob errors
	exitUnavailable = 3 // the transport cannot run on this host: a skip, not a failure
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `Usage: protolab-spims serve|run|transports [flags]   (--help after the command lists its flags)

  serve       the responder of every procedure: --transport T --listen ADDR[,ADDR2]
              until SIGTERM/SIGINT (exit 0)
  run         one measurement from a job (--job FILE, or --job - for stdin);
              one JSON result line on stdout, progress on stderr
  transports  each registered transport, whether it runs here (and why not)

Job (JSON; sizes in payload bytes, times as durations with units):
  {"procedure": "request_response" | "bulk_get" | "connect_disconnect",
   "transport": "tcp", "target": "10.0.1.2:5001",
   "target2": "10.0.2.2:5001", "source": "10.0.1.1", "source2": "10.0.2.1",
   "iterations": 1000, "time_limit": "30s", "timeout": "10s", "late_bound": "50ms",
   "size": {"dist": "constant", "value": 32},
   "response_size": {"dist": "bivalue", "value": 64, "value2": 1400, "p": 0.9},
   "delay": {"dist": "exponential", "mean": "1ms"},
   "count": 1000, "seed": 1, "samples": true,
   "options": {"user_timeout": "2s", "dscp": "ef"},
   "source_data": {"access": "file", "path": "/srv/spims/data"},
   "destination_data": {"access": "virtual_memory"},
   "delays": true, "sender_counters": true,
   "expedited": {"via": "urgent", "rate": 0.33, "size": 16}}
  dist: constant(value) uniform(min,max) normal(mean,sd) exponential(mean)
  bivalue(value,value2,p). target2 (request_response only) is dual mode: each
  request on both paths, first reply wins. bulk_get: count units of size
  bytes per transfer, iterations transfers. connect_disconnect: one exchange
  per connection when size is given, else dial and close.
  source_data / destination_data (SPIMS <source> / <destination>), access
  memory (default: one reused buffer), virtual_memory (fresh pages per unit:
  page faults count) or file (absolute path; the sender reads it in turn,
  from the start again at its end; the receiver's file is truncated, then
  each unit appended, write time included). source_data is the responder's
  for bulk_get (it must be there), the requests' for request_response;
  destination_data is bulk_get's, at the initiator.
  bulk_get only: delays times each unit from the return of the
  responder's write to its read here on one clock (CLOCK_MONOTONIC: both
  must run on one kernel, checked by boot_id), giving
  bulk.unit_delay_seconds and per_octet_delay_seconds; sender_counters returns the responder's counter
  increments (tcp retransmitted_segments, quic packets_lost); expedited
  sends a size-byte message after every 1/rate-th unit (seed 002's rate,
  .33 .. .03) via urgent (tcp: in the bulk's stream, its last byte TCP
  urgent data), connection (a second connection to the responder) or
  stream (quic: a second stream), with delays: bulk.expedited.
  options.dscp (0..63 or ef, af11..af43, cs0..cs7) marks the initiator's
  packets and asks the responder to mark its side of each connection;
  serve --option dscp=N marks every connection from its handshake on.

Examples:
  protolab-spims serve --transport tcp --listen 10.0.1.2:5001,10.0.2.2:5001
  echo '{"procedure":"request_response","transport":"tcp","target":"10.0.1.2:5001","iterations":1000}' |
    protolab-spims run --job -
  echo '{"procedure":"bulk_get","transport":"quic","target":"10.0.1.2:5001","options":{"dscp":"af41"},
    "source_data":{"access":"file","path":"/srv/spims/data"},"destination_data":{"access":"file","path":"/tmp/got"}}' |
    protolab-spims run --job -
  protolab-spims transports --knobs

Exit codes: 0 done; 1 the run failed; 2 bad usage, job or option (also a
bulk source_data the responder cannot read); 3 the transport is not
available on this host (report it as a skip).
Metrics (protolab_spims_*) on --listen-metrics when given.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	switch args[0] {
	case "-version", "--version":
		fmt.Fprintf(stdout, "protolab-spims %s (revision %s, %s)\n", version, revision, runtime.Version())
		return exitOK
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "run":
		return runJob(ctx, args[1:], stdin, stdout, stderr)
	case "transports":
		return transports(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "protolab-spims: unknown command %q\n\n%s", args[0], usage)
	return exitBadInput
}

// flags is a FlagSet whose --help prints the usage and the command's flags.
func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("protolab-spims "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage+"\nFlags of "+name+":\n")
		fs.PrintDefaults()
	}
	return fs
}

// parse is flag parsing with the exit code of its failure (-1: go on).
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBadInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		return exitBadInput
	}
	return -1
}

func serve(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flags("serve", stderr)
	name := fs.String("transport", "tcp", "transport (see `protolab-spims transports`)")
	listen := fs.String("listen", "", "address(es) to answer on, host:port[,host:port] (e.g. 10.0.1.2:5001,10.0.2.2:5001)")
	knobs := map[string]string{}
	fs.Func("option", "transport knob key=value, repeatable (e.g. --option user_timeout=2s, --option dscp=ef to mark every connection; `protolab-spims transports --knobs` lists them)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want key=value, not %q", s)
		}
		knobs[k] = v
		return nil
	})
	metricsAddr := fs.String("listen-metrics", "", "address for /metrics (e.g. :9104); empty: none")
	if code := parse(fs, args, stderr); code >= 0 {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "protolab-spims serve: "+format+"\n", a...)
		return code
	}
	t, err := transport.Get(*name)
	if err != nil {
		return fail(exitBadInput, "%v", err)
	}
	if err := t.Available(); err != nil {
		return fail(exitUnavailable, "%v", err)
	}
	if *listen == "" {
		return fail(exitBadInput, "--listen missing (host:port[,host:port])")
	}
	live := &spims.Live{}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, live, stderr); err != nil {
			return fail(exitBadInput, "%v", err)
		}
	}
	var lns []transport.Listener
	for _, a := range strings.Split(*listen, ",") {
		ln, err := t.Listen(strings.TrimSpace(a), transport.Options{Knobs: knobs})
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			var ke *transport.KnobError
			if errors.As(err, &ke) {
				return fail(exitBadInput, "%v", err)
			}
			return fail(exitFailed, "%v", err)
		}
		lns = append(lns, ln)
		fmt.Fprintf(stderr, "protolab-spims serve: %s listening on %s\n", t.Name(), ln.Addr())
	}
	var wg sync.WaitGroup
	errs := make([]error, len(lns))
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "protolab-spims serve: "+format+"\n", a...) }
	for i, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = spims.Serve(ctx, ln, spims.MaxPayload(t), live, logf)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(exitFailed, "%v", err)
	}
	return exitOK
}

func runJob(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flags("run", stderr)
	jobPath := fs.String("job", "", "job file (JSON), - for stdin")
	metricsAddr := fs.String("listen-metrics", "", "address for /metrics (e.g. :9104); empty: none")
	progress := fs.Duration("progress", 10*time.Second, "interval of progress lines on stderr (0: none)")
	if code := parse(fs, args, stderr); code >= 0 {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "protolab-spims run: "+format+"\n", a...)
		return code
	}
	var b []byte
	var err error
	switch *jobPath {
	case "":
		return fail(exitBadInput, "--job missing (a JSON file, or - for stdin)")
	case "-":
		b, err = io.ReadAll(stdin)
	default:
		b, err = os.ReadFile(*jobPath)
	}
	if err != nil {
		return fail(exitBadInput, "reading the job: %v", err)
	}
	plan, err := spims.ParseJob(b)
	if err != nil {
		if errors.Is(err, transport.ErrUnavailable) {
			return fail(exitUnavailable, "%v", err)
		}
		return fail(exitBadInput, "%v", err)
	}
	live := &spims.Live{Procedure: plan.Job.Procedure}
	if *metricsAddr != "" {
		if err := serveMetrics(ctx, *metricsAddr, live, stderr); err != nil {
			return fail(exitBadInput, "%v", err)
		}
	}
	if *progress > 0 {
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go report(pctx, live, plan, *progress, stderr)
	}
	res, err := spims.Run(ctx, plan, live)
	if res != nil {
		if werr := res.Write(stdout); werr != nil {
			return fail(exitFailed, "writing the result: %v", werr)
		}
	}
	if err != nil {
		var ke *transport.KnobError
		var bj *spims.BadJob
		if errors.As(err, &ke) || errors.As(err, &bj) {
			return fail(exitBadInput, "%v", err)
		}
		return fail(exitFailed, "%v", err)
	}
	return exitOK
}

// report prints a progress line every interval.
func report(ctx context.Context, live *spims.Live, plan *spims.Plan, every time.Duration, w io.Writer) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	of := ""
	if n := plan.Limits.Iterations; n > 0 {
		of = fmt.Sprintf(" of %d", n)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			s, c, t := live.Progress()
			fmt.Fprintf(w, "protolab-spims run: %s over %s: %d%s started, %d completed, %d timeouts\n", plan.Job.Procedure, plan.T.Name(), s, of, c, t)
		}
	}
}

// registry is the /metrics content: build info and the run's figures.
func registry(live *spims.Live) (*prometheus.Registry, error) {
	return metrics.AgentRegistry(metrics.Config{Version: version, Revision: revision}, "spims", live)
}

func serveMetrics(ctx context.Context, addr string, live *spims.Live, stderr io.Writer) error {
	reg, err := registry(live)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	go func() {
		if err := metrics.ListenAndServe(ctx, addr, metrics.NewHandler(reg, logger), logger); err != nil {
			logger.Error("metrics server", "err", err)
		}
	}()
	return nil
}

func transports(args []string, stdout, stderr io.Writer) int {
	fs := flags("transports", stderr)
	knobs := fs.Bool("knobs", false, "also list each transport's knobs (run: options, serve: --option)")
	if code := parse(fs, args, stderr); code >= 0 {
		return code
	}
	for _, n := range transport.Names() {
		t, _ := transport.Get(n)
		if err := t.Available(); err != nil {
			fmt.Fprintf(stdout, "%-6s unavailable  %v\n", n, strings.TrimPrefix(err.Error(), transport.ErrUnavailable.Error()+": "))
		} else {
			fmt.Fprintf(stdout, "%-6s available    %s\n", n, t.Doc())
		}
		if *knobs {
			for _, k := range t.Knobs() {
				def := ""
				if k.Default != "" {
					def = " (default " + k.Default + ")"
				}
				fmt.Fprintf(stdout, "         %s%s: %s\n", k.Name, def, k.Help)
			}
		}
	}
	return exitOK
}
