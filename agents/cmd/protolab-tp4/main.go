// Command protolab-tp4 runs the class-4-like transport of package
// protolab/agents/tp4 over UDP: `recv` waits for one connection and
// measures what arrives, `send` connects and transfers the paper's
// workload (TSDUs continuously queued, an expedited TSDU after every N-th),
// `sim` runs the same transfer in virtual time over an in-memory link. Each
// prints one JSON summary line on stdout at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"protolab/agents/metrics"
	"protolab/agents/tp4"
)

var (
	version  = metrics.DefaultVersion
	revision = metrics.DefaultRevision
)

// Exit codes.
const (
	exitOK       = tp4.ExitOK
	exitBadInput = tp4.ExitBadInput
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage: protolab-tp4 send|recv|sim [flags]   (--help after the command lists its flags)

  recv   wait on --addr for one connection, take the TSDUs, answer the
         disconnect, linger, report (receive buffer, per-octet delay,
         expedited delay, throughput efficiency)
  send   connect to --addr, send --tsdus TSDUs of --tsdu-size octets as the
         send buffer takes them (the paper's "continuously queued"), an
         expedited TSDU after every 1/--expedited-rate TSDUs, disconnect
         once all is acknowledged, report (retransmissions, send buffer)
  sim    the same transfer in virtual time over an in-memory link of
         --link-kbit, --delay and --ber (both ends in this process)

Defaults are the paper's Table 2 (TPDU 1024 octets, window 12 K, buffers
32 K, retransmission timer 2 s, window timer 6 s); --table 3 takes Table 3's
(TPDU 128, window 20 K, timer 650 ms, window timer 2 s, NBS expedited)
for every flag not given. Both ends should get the same transport flags:
the receiver's --window is the credit it grants, its --ack decides whether
selective acknowledgement is agreed.

Sender and receiver stamp TSDUs with the sender's clock: per-octet and
expedited delays are meaningful when both share a clock (one host).

Exit codes: 0 the transfer completed byte-exact; 1 it did not (connection
failed, time limit, corrupt data); 2 bad usage.
Metrics (protolab_tp4_*) on --listen when given.
`

type opts struct {
	addr, listen, ack, exp   string
	table                    int
	tpdu, window, sbuf, rbuf int
	rto, wtimer, inact       time.Duration
	maxTx, overhead          int
	linkKbit                 float64
	pace                     bool
	tsdus, tsduSize          int
	expRate                  float64
	limit, linger            time.Duration
	delay                    time.Duration
	ber, loss                float64
	seed                     uint64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	role := args[0]
	switch role {
	case "-version", "--version":
		fmt.Fprintf(stdout, "protolab-tp4 %s (revision %s, %s)\n", version, revision, runtime.Version())
		return exitOK
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "send", "recv", "sim":
	default:
		fmt.Fprintf(stderr, "protolab-tp4: unknown command %q\n\n%s", role, usage)
		return exitBadInput
	}
	d := tp4.DefaultConfig()
	var o opts
	fs := flag.NewFlagSet("protolab-tp4 "+role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	defAddr := ":7400"
	if role == "send" {
		defAddr = ""
	}
	fs.StringVar(&o.addr, "addr", defAddr, "recv: UDP address to listen on; send: the receiver's host:port")
	fs.StringVar(&o.listen, "listen", "", "address for /metrics (e.g. :9105); empty: none")
	fs.IntVar(&o.table, "table", 2, "the paper's table whose transport parameters are the defaults: 2 or 3")
	fs.StringVar(&o.ack, "ack", "one-for-one", "acknowledgement: one-for-one | selective")
	fs.StringVar(&o.exp, "expedited", "iso", "expedited data mechanism: iso | nbs (sender only)")
	fs.IntVar(&o.tpdu, "tpdu-size", d.TPDUSize, "largest TPDU, header included, octets (power of two, 128..8192)")
	fs.IntVar(&o.window, "window", d.Window, "window, octets (credit = window / TPDU size)")
	fs.IntVar(&o.sbuf, "send-buffer", d.SendBuffer, "send buffer, octets of unacknowledged user data")
	fs.IntVar(&o.rbuf, "recv-buffer", d.RecvBuffer, "receive buffer, octets of user data held")
	fs.DurationVar(&o.rto, "retransmit", d.Retransmit, "retransmission timer, per TPDU (e.g. 2s, 650ms)")
	fs.DurationVar(&o.wtimer, "window-timer", d.WindowTimer, "receiver: repeat the AK after this long without one")
	fs.DurationVar(&o.inact, "inactivity", d.Inactivity, "receiver: give up after this long without a TPDU")
	fs.IntVar(&o.maxTx, "max-transmissions", d.MaxTransmissions, "transmissions of one TPDU before the connection is given up (ISO's N)")
	fs.Float64Var(&o.linkKbit, "link-kbit", 64, "link speed, kbit/s (1000 bit/s): the throughput efficiency's denominator and the pace")
	fs.BoolVar(&o.pace, "pace", true, "send: space TPDUs as the --link-kbit link would (with --overhead octets each)")
	fs.IntVar(&o.overhead, "overhead", d.Overhead, "octets per TPDU below the transport (UDP + IPv4: 28), for the pace")
	fs.IntVar(&o.tsdus, "tsdus", 60, "send: TSDUs to transfer")
	fs.IntVar(&o.tsduSize, "tsdu-size", 10240, fmt.Sprintf("TSDU size, octets (>= %d); recv checks it", tp4.MinTSDUSize))
	fs.Float64Var(&o.expRate, "expedited-rate", 0, "send: expedited TSDUs per normal TSDU, 0..1 (.33 .14 .08 .0588 .0455 .037 .03; 0: none)")
	fs.DurationVar(&o.limit, "time-limit", 10*time.Minute, "give up after this long")
	fs.DurationVar(&o.linger, "linger", 0, "recv: answer repeated DRs this long after the disconnect (0: 2 x --retransmit)")
	fs.DurationVar(&o.delay, "delay", 270*time.Millisecond, "sim: one-way delay")
	fs.Float64Var(&o.ber, "ber", 1e-9, "sim: bit error rate, 0..1e-2 (a TPDU of n octets is lost with 1-(1-ber)^(8n))")
	fs.Float64Var(&o.loss, "loss", 0, "sim: extra loss probability per TPDU, 0..1")
	fs.Uint64Var(&o.seed, "seed", 1, "sim: random seed")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			fs.PrintDefaults()
			return exitOK
		}
		return exitBadInput
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "protolab-tp4 %s: "+format+"\n", append([]any{role}, a...)...)
		return exitBadInput
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	cfg, err := o.config(fs)
	if err != nil {
		return bad("%v", err)
	}
	ro := tp4.RunOptions{Role: role, Addr: o.addr, Listen: o.listen, LinkKbit: o.linkKbit, TSDUs: o.tsdus,
		TSDUSize: o.tsduSize, ExpRate: o.expRate, Limit: o.limit, Linger: o.linger, Delay: o.delay, BER: o.ber,
		Loss: o.loss, Seed: o.seed, Version: version, Revision: revision}
	if err := ro.Check(); err != nil {
		return bad("%v", err)
	}
	return tp4.Run(ctx, cfg, ro, stdout, stderr)
}

// config is the transport configuration: the table's defaults, then the
// flags given.
func (o *opts) config(fs *flag.FlagSet) (tp4.Config, error) {
	var c tp4.Config
	switch o.table {
	case 2:
		c = tp4.DefaultConfig()
	case 3:
		c = tp4.Table3Config()
	default:
		return c, fmt.Errorf("--table %d: want 2 or 3", o.table)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	pick := func(name string, dst *int, v int) {
		if set[name] {
			*dst = v
		}
	}
	pickD := func(name string, dst *time.Duration, v time.Duration) {
		if set[name] {
			*dst = v
		}
	}
	pick("tpdu-size", &c.TPDUSize, o.tpdu)
	pick("window", &c.Window, o.window)
	pick("send-buffer", &c.SendBuffer, o.sbuf)
	pick("recv-buffer", &c.RecvBuffer, o.rbuf)
	pick("max-transmissions", &c.MaxTransmissions, o.maxTx)
	pick("overhead", &c.Overhead, o.overhead)
	pickD("retransmit", &c.Retransmit, o.rto)
	pickD("window-timer", &c.WindowTimer, o.wtimer)
	pickD("inactivity", &c.Inactivity, o.inact)
	var err error
	if c.Ack, err = tp4.ParseAckMode(o.ack); err != nil {
		return c, fmt.Errorf("--ack: %w", err)
	}
	if set["expedited"] || o.table == 2 {
		if c.Expedited, err = tp4.ParseExpMode(o.exp); err != nil {
			return c, fmt.Errorf("--expedited: %w", err)
		}
	}
	if o.pace {
		c.PaceBitsPerSecond = o.linkKbit * 1000
	}
	if o.linger <= 0 {
		o.linger = 2 * c.Retransmit
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}
