package tp4

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"protolab/agents/metrics"
)

// Exit codes of protolab-tp4.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the transfer did not complete (connection failed, time limit, corrupt data)
	ExitBadInput = 2 // usage or flag errors
)

// RunOptions are protolab-tp4's settings beside the transport's Config:
// the role, its addresses, the workload, the link and (sim) the path.
type RunOptions struct {
	Role     string // send, recv or sim
	Addr     string // recv: UDP address to listen on; send: the receiver's host:port
	Listen   string // address for /metrics; empty: none
	LinkKbit float64
	TSDUs    int
	TSDUSize int
	ExpRate  float64
	Limit    time.Duration
	Linger   time.Duration
	Delay    time.Duration
	BER      float64
	Loss     float64
	Seed     uint64
	Version  string
	Revision string
}

// Check checks the workload's, the link's and the path's settings; the
// error names the flag.
func (o *RunOptions) Check() error {
	switch {
	case o.TSDUs < 1:
		return fmt.Errorf("--tsdus %d: want >= 1", o.TSDUs)
	case o.TSDUSize < MinTSDUSize || o.TSDUSize > MaxTSDUSize:
		return fmt.Errorf("--tsdu-size %d: want %d..%d octets", o.TSDUSize, MinTSDUSize, MaxTSDUSize)
	case o.ExpRate < 0 || o.ExpRate > 1:
		return fmt.Errorf("--expedited-rate %g: want 0..1", o.ExpRate)
	case o.LinkKbit <= 0:
		return fmt.Errorf("--link-kbit %g: want > 0", o.LinkKbit)
	case o.Limit <= 0:
		return fmt.Errorf("--time-limit %v: want > 0", o.Limit)
	case o.BER < 0 || o.BER > 1e-2:
		return fmt.Errorf("--ber %g: want 0..1e-2", o.BER)
	case o.Loss < 0 || o.Loss > 1:
		return fmt.Errorf("--loss %g: want 0..1", o.Loss)
	}
	return nil
}

// Run runs o.Role (send, recv or sim) with cfg, prints its one JSON
// summary line on stdout and what went wrong on stderr, and gives the exit
// code (ExitOK, ExitFailed or ExitBadInput).
func Run(ctx context.Context, cfg Config, o RunOptions, stdout, stderr io.Writer) int {
	if o.Role == "sim" {
		return o.sim(cfg, stdout, stderr)
	}
	mu := &sync.Mutex{}
	col := &Collector{Mu: mu}
	if o.Listen != "" {
		if err := o.serveMetrics(ctx, o.Listen, col, stderr); err != nil {
			fmt.Fprintf(stderr, "protolab-tp4 %s: %v\n", o.Role, err)
			return ExitBadInput
		}
	}
	if o.Role == "send" {
		return o.send(ctx, cfg, mu, col, stdout, stderr)
	}
	return o.recv(ctx, cfg, mu, col, stdout, stderr)
}

func (o *RunOptions) linkBits() float64 { return o.LinkKbit * 1000 }

// header is the part of every summary that repeats the parameters.
func (o *RunOptions) header(role string, c Config) map[string]any {
	return map[string]any{
		"tool": "protolab-tp4", "role": role, "version": o.Version,
		"ack": c.Ack.String(), "expedited_mechanism": c.Expedited.String(),
		"tpdu_size_octets": c.TPDUSize, "window_octets": c.Window,
		"send_buffer_octets": c.SendBuffer, "recv_buffer_octets": c.RecvBuffer,
		"retransmit_seconds": c.Retransmit.Seconds(), "window_timer_seconds": c.WindowTimer.Seconds(),
		"link_bits_per_second": o.linkBits(), "pace_bits_per_second": c.PaceBitsPerSecond,
		"tsdus": o.TSDUs, "tsdu_size_octets": o.TSDUSize,
		"expedited_rate": o.ExpRate, "expedited_every": ExpeditedEvery(o.ExpRate),
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
		return ExitFailed
	}
	fmt.Fprintln(w, string(b))
	if !ok {
		return ExitFailed
	}
	return ExitOK
}

func (o *RunOptions) send(ctx context.Context, cfg Config, mu *sync.Mutex, col *Collector, stdout, stderr io.Writer) int {
	if o.Addr == "" {
		fmt.Fprintln(stderr, "protolab-tp4 send: --addr missing (the receiver's host:port)")
		return ExitBadInput
	}
	peer, err := resolve(o.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: --addr %q: %v\n", o.Addr, err)
		return ExitBadInput
	}
	s, err := NewSender(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", err)
		return ExitBadInput
	}
	col.Sender = s
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", err)
		return ExitFailed
	}
	defer conn.Close()
	feed := &Feeder{TSDUs: o.TSDUs, Size: o.TSDUSize, Every: ExpeditedEvery(o.ExpRate)}
	var feedErr error
	start := time.Now()
	s.Connect(start)
	l := &Loop{Conn: conn, Peer: peer, EP: s, Mu: mu, Hook: func(now time.Time) {
		if feedErr == nil {
			feedErr = feed.Feed(s, now)
		}
	}}
	rctx, cancel := context.WithTimeout(ctx, o.Limit)
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
	ok := errs == nil && st.State == "closed" && n == o.TSDUs && st.AllAcked.After(st.FirstSubmit)
	if errs != nil {
		m["error"] = errs.Error()
		fmt.Fprintf(stderr, "protolab-tp4 send: %v\n", errs)
	}
	return emit(stdout, m, ok)
}

func (o *RunOptions) recv(ctx context.Context, cfg Config, mu *sync.Mutex, col *Collector, stdout, stderr io.Writer) int {
	la, err := net.ResolveUDPAddr("udp", o.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: --addr %q: %v\n", o.Addr, err)
		return ExitBadInput
	}
	cfg.MaxTSDU = o.TSDUSize // a longer TSDU is not the workload's: the receiver gives up
	r, err := NewReceiver(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: %v\n", err)
		return ExitBadInput
	}
	col.Receiver = r
	meter := &Meter{Size: o.TSDUSize}
	r.OnTSDU, r.OnExpedited = meter.TSDU, meter.Expedited
	conn, err := net.ListenUDP("udp", la)
	if err != nil {
		fmt.Fprintf(stderr, "protolab-tp4 recv: %v\n", err)
		return ExitFailed
	}
	defer conn.Close()
	fmt.Fprintf(stderr, "protolab-tp4 recv: listening on %s\n", conn.LocalAddr())
	start := time.Now()
	l := &Loop{Conn: conn, EP: r, Mu: mu, Linger: o.Linger}
	rctx, cancel := context.WithTimeout(ctx, o.Limit)
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

func (o *RunOptions) sim(cfg Config, stdout, stderr io.Writer) int {
	path := Path{RateBitsPerSecond: o.linkBits(), Delay: o.Delay, BER: o.BER, Loss: o.Loss, Overhead: cfg.Overhead}
	res, err := Simulate(SimConfig{Sender: cfg, Receiver: cfg, Forward: path, Reverse: path,
		TSDUs: o.TSDUs, TSDUSize: o.TSDUSize, ExpeditedEvery: ExpeditedEvery(o.ExpRate),
		LinkBitsPerSec: o.linkBits(), Seed: o.Seed, Limit: o.Limit})
	m := o.header("sim", cfg)
	m["delay_seconds"], m["ber"], m["loss"], m["seed"] = o.Delay.Seconds(), o.BER, o.Loss, o.Seed
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

func (o *RunOptions) serveMetrics(ctx context.Context, addr string, col *Collector, stderr io.Writer) error {
	reg, err := metrics.AgentRegistry(metrics.Config{Version: o.Version, Revision: o.Revision}, "tp4", col)
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
