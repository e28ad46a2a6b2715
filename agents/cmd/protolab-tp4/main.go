// Command protolab-tp4 runs the class-4-like transport of package
// protolab/agents/tp4 over UDP: `recv` waits for one connection and
// measures what arrives, `send` connects and transfers the paper's
// workload (TSDUs continuously queued, an expedited TSDU after every N-th),
// `sim` runs the same transfer in virtual time over an in-memory link. Each
// prints one JSON summary line on stdout at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
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
	exitOK       = 0
	exitFailed   = 1 // the transfer did not complete (connection failed, time limit, corrupt data)
	exitBadInput = 2 // usage or flag errors
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
	switch {
	case o.tsdus < 1:
		return bad("--tsdus %d: want >= 1", o.tsdus)
	case o.tsduSize < tp4.MinTSDUSize || o.tsduSize > tp4.MaxTSDUSize:
		return bad("--tsdu-size %d: want %d..%d octets", o.tsduSize, tp4.MinTSDUSize, tp4.MaxTSDUSize)
	case o.expRate < 0 || o.expRate > 1:
		return bad("--expedited-rate %g: want 0..1", o.expRate)
	case o.linkKbit <= 0:
		return bad("--link-kbit %g: want > 0", o.linkKbit)
	case o.limit <= 0:
		return bad("--time-limit %v: want > 0", o.limit)
	case o.ber < 0 || o.ber > 1e-2:
		return bad("--ber %g: want 0..1e-2", o.ber)
	case o.loss < 0 || o.loss > 1:
		return bad("--loss %g: want 0..1", o.loss)
	}
	if role == "sim" {
		return o.sim(cfg, stdout, stderr)
	}
	mu := &sync.Mutex{}
	col := &tp4.Collector{Mu: mu}
	if o.listen != "" {
		if err := serveMetrics(ctx, o.listen, col, stderr); err != nil {
			return bad("%v", err)
		}
	}
	if role == "send" {
		return o.send(ctx, cfg, mu, col, stdout, stderr)
	}
	return o.recv(ctx, cfg, mu, col, stdout, stderr)
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

func (o *opts) linkBits() float64 { return o.linkKbit * 1000 }

// header is the part of every summary that repeats the parameters.
func (o *opts) header(role string, c tp4.Config) map[string]any {
	return map[string]any{
		"tool": "protolab-tp4", "role": role, "version": version,
		"ack": c.Ack.String(), "expedited_mechanism": c.Expedited.String(),
		"tpdu_size_octets": c.TPDUSize, "window_octets": c.Window,
		"send_buffer_octets": c.SendBuffer, "recv_buffer_octets": c.RecvBuffer,
		"retransmit_seconds": c.Retransmit.Seconds(), "window_timer_seconds": c.WindowTimer.Seconds(),
		"link_bits_per_second": o.linkBits(), "pace_bits_per_second": c.PaceBitsPerSecond,
		"tsdus": o.tsdus, "tsdu_size_octets": o.tsduSize,
		"expedited_rate": o.expRate, "expedited_every": tp4.ExpeditedEvery(o.expRate),
	}
}

// merge adds v's JSON fields to m under prefix.
func merge(m map[string]any, prefix string, v any) {
	b, _ := json.Marshal(v)
	var x map[string]any
	_ = json.Unmarshal(b, &x)
	for k, val := range x {
		m[prefix+k] = val
	}
}

func emit(w io.Writer, m map[string]any, ok bool) int {
	for k, x := range m {
		if f, isF := x.(float64); isF && (math.IsNaN(f) || math.IsInf(f, 0)) {
			m[k] = nil
		}
	}
	m["completed"] = ok
	b, err := json.Marshal(m)
	if err != nil {
		return exitFailed
	}
	fmt.Fprintln(w, string(b))
	if !ok {
		return exitFailed
	}
	return exitOK
}

func (o *opts) send(ctx context.Context, cfg tp4.Config, mu *sync.Mutex, col *tp4.Collector, stdout, stderr io.Writer) int {
	if o.addr == "" {
		fmt.Fprintln(stderr, "protolab-tp4 send: --addr missing (the receiver's host:port)")
		return exitBadInput
	}
	peer, err := resolve(o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: --addr %q: %v\n", o.addr, err)
		return exitBadInput
	}
	s, err := tp4.NewSender(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", err)
		return exitBadInput
	}
	col.Sender = s
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", err)
		return exitFailed
	}
	defer conn.Close()
	feed := &tp4.Feeder{TSDUs: o.tsdus, Size: o.tsduSize, Every: tp4.ExpeditedEvery(o.expRate)}
	var feedErr error
	start := time.Now()
	s.Connect(start)
	l := &tp4.Loop{Conn: conn, Peer: peer, EP: s, Mu: mu, Hook: func(now time.Time) {
		if feedErr == nil {
			feedErr = feed.Feed(s, now)
		}
	}}
	rctx, cancel := context.WithTimeout(ctx, o.limit)
	defer cancel()
	runErr := l.Run(rctx)
	now := time.Now()
	mu.Lock()
	st := s.Stats(now)
	mu.Unlock()
	m := o.header("send", cfg)
	merge(m, "", st)
	n, eds := feed.Submitted()
	m["tsdus_submitted"], m["expedited_submitted"] = n, eds
	m["elapsed_seconds"] = now.Sub(start).Seconds()
	m["write_errors"] = l.WriteErrors
	m["foreign_datagrams"] = l.Foreign
	if !st.AllAcked.IsZero() {
		span := st.AllAcked.Sub(st.FirstSubmit).Seconds()
		m["transfer_acked_seconds"] = span
		m["throughput_efficiency_acked"] = float64(st.Octets) / span / (o.linkBits() / 8)
	}
	errs := errors.Join(runErr, s.Err(), feedErr)
	ok := errs == nil && st.State == "closed" && n == o.tsdus && st.AllAcked.After(st.FirstSubmit)
	if errs != nil {
		m["error"] = errs.Error()
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", errs)
	}
	return emit(stdout, m, ok)
}

func (o *opts) recv(ctx context.Context, cfg tp4.Config, mu *sync.Mutex, col *tp4.Collector, stdout, stderr io.Writer) int {
	la, err := net.ResolveUDPAddr("udp", o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: --addr %q: %v\n", o.addr, err)
		return exitBadInput
	}
	cfg.MaxTSDU = o.tsduSize // a longer TSDU is not the workload's: the receiver gives up
	r, err := tp4.NewReceiver(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: %v\n", err)
		return exitBadInput
	}
	col.Receiver = r
	meter := &tp4.Meter{Size: o.tsduSize}
	r.OnTSDU, r.OnExpedited = meter.TSDU, meter.Expedited
	conn, err := net.ListenUDP("udp", la)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: %v\n", err)
		return exitFailed
	}
	defer conn.Close()
	fmt.Fprintf(stderr, "protolab-tp4 recv: listening on %s\n", conn.LocalAddr())
	start := time.Now()
	l := &tp4.Loop{Conn: conn, EP: r, Mu: mu, Linger: o.linger}
	rctx, cancel := context.WithTimeout(ctx, o.limit)
	defer cancel()
	runErr := l.Run(rctx)
	now := time.Now()
	mu.Lock()
	st, ms := r.Stats(now), meter.Stats()
	mu.Unlock()
	m := o.header("recv", cfg)
	merge(m, "", st)
	merge(m, "user_", ms)
	m["elapsed_seconds"] = now.Sub(start).Seconds()
	m["transfer_seconds"] = ms.TransferSeconds()
	m["throughput_efficiency"] = ms.Efficiency(o.linkBits())
	m["per_octet_delay_seconds"] = ms.PerOctetDelay
	m["expedited_delay_seconds"] = ms.ExpDelayMean
	m["foreign_datagrams"] = l.Foreign
	errs := errors.Join(runErr, r.Err())
	if ms.Corrupt > 0 || ms.OutOfOrder > 0 {
		errs = errors.Join(errs, fmt.Errorf("%d corrupt, %d out-of-order TSDUs: %s", ms.Corrupt, ms.OutOfOrder, ms.FirstError))
	}
	ok := errs == nil && st.State == "closed"
	if errs != nil {
		m["error"] = errs.Error()
		fmt.Fprintf(stderr, "protolab-tp4 recv: %v\n", errs)
	}
	return emit(stdout, m, ok)
}

func (o *opts) sim(cfg tp4.Config, stdout, stderr io.Writer) int {
	path := tp4.Path{RateBitsPerSecond: o.linkBits(), Delay: o.delay, BER: o.ber, Loss: o.loss, Overhead: cfg.Overhead}
	res, err := tp4.Simulate(tp4.SimConfig{Sender: cfg, Receiver: cfg, Forward: path, Reverse: path,
		TSDUs: o.tsdus, TSDUSize: o.tsduSize, ExpeditedEvery: tp4.ExpeditedEvery(o.expRate),
		LinkBitsPerSec: o.linkBits(), Seed: o.seed, Limit: o.limit})
	m := o.header("sim", cfg)
	m["delay_seconds"], m["ber"], m["loss"], m["seed"] = o.delay.Seconds(), o.ber, o.loss, o.seed
	merge(m, "sender_", res.Sender)
	merge(m, "receiver_", res.Receiver)
	merge(m, "user_", res.Meter)
	m["elapsed_seconds"] = res.Elapsed.Seconds()
	m["transfer_seconds"] = res.Meter.TransferSeconds()
	m["throughput_efficiency"] = res.Efficiency
	m["per_octet_delay_seconds"] = res.Meter.PerOctetDelay
	m["expedited_delay_seconds"] = res.Meter.ExpDelayMean
	m["dt_retransmissions"] = res.Sender.DTRetransmissions
	m["receive_buffer_avg_octets"] = res.Receiver.RecvBufferAvg
	m["receive_buffer_max_octets"] = res.Receiver.RecvBufferMax
	m["tpdus_lost"] = res.Lost
	if err != nil {
		m["error"] = err.Error()
		fmt.Fprintf(stderr, "protolab-tp4 sim: %v\n", err)
	}
	return emit(stdout, m, err == nil && res.Completed)
}

// resolve turns host:port into an address (IPv4 preferred).
func resolve(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	ua, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return ua.AddrPort(), nil
}

func serveMetrics(ctx context.Context, addr string, col *tp4.Collector, stderr io.Writer) error {
	set, err := metrics.New(metrics.Config{Version: version, Revision: revision}, "build_info")
	if err != nil {
		return err
	}
	if err := set.Add("tp4", col); err != nil {
		return err
	}
	reg, err := metrics.NewRegistry(set)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	ln.Close() // the port is free; ListenAndServe binds it again
	go func() { _ = metrics.ListenAndServe(ctx, addr, metrics.NewHandler(reg, logger), logger) }()
	return nil
}
