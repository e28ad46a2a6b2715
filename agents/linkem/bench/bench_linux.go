package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"protolab/agents/internal/counters"
	"protolab/agents/internal/linkembench"
	"protolab/agents/internal/netnstestbed"
	"protolab/agents/linkem"
)

// Options configure Run (protolab-linkem bench's flags).
type Options struct {
	Duration, Warmup time.Duration // measured time and warm-up of each throughput run
	Sizes            []int         // UDP payload sizes of the throughput runs, bytes
	LatRate, LatN    int           // packets per second and packets of a latency run
	LinkemCPU        int           // CPU linkem is pinned to
	LoadCPU          int           // CPU the sender and receiver are pinned to
	Bin              string        // linkem binary to run
	Queue            uint          // NFQUEUE number inside the throw-away namespace
	BusyPoll         time.Duration // linkem's --busy-poll
}

// pinProcess pins every thread of this process (and so the threads it
// starts later) to cpu.
func pinProcess(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return err
		}
	}
	return nil
}

// Run measures linkem's added delay and throughput as Options say,
// logging its steps on logw, and removes everything it made (also on
// SIGINT/SIGTERM). It pins this process to o.LoadCPU when taskset is there
// and there is more than one CPU.
func Run(ctx context.Context, o Options, logw io.Writer) (*linkembench.Result, error) {
	res := &linkembench.Result{LinkemCPU: o.LinkemCPU, LoadCPU: o.LoadCPU, BusyPollUS: float64(o.BusyPoll) / 1e3, Latency: map[string]linkembench.LatRes{}}
	_, tasksetErr := exec.LookPath("taskset")
	res.Pinned = tasksetErr == nil && runtime.NumCPU() > 1
	if res.Pinned {
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		if err := pinProcess(o.LoadCPU); err != nil {
			return nil, fmt.Errorf("pinning to CPU %d: %w", o.LoadCPU, err)
		}
		defer unpinProcess()
	}
	tb, err := netnstestbed.New("bn", uint16(o.Queue))
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	// Payload sizes are UDP payloads: raise the MTU so that even the
	// largest goes as one IP packet (a 1500-byte payload is a 1528-byte
	// packet, which a 1500 MTU would fragment into two).
	if err := tb.SetMTU(9000); err != nil {
		return nil, err
	}
	// Clean up on SIGINT/SIGTERM too.
	ctx, stop := signalContext(ctx)
	defer stop()

	rx, err := newBenchReceiver(tb)
	if err != nil {
		return nil, err
	}
	defer rx.close()
	tx, err := newBenchSender(tb, 9000)
	if err != nil {
		return nil, err
	}
	defer tx.close()
	// The throughput runs go to a socket nobody reads (datagrams pile up,
	// then are dropped at the socket), so that the load CPU only sends:
	// the rate is counted where the packets cross B's veth (without
	// linkem) or leave linkem (its passed counter).
	blackhole, err := tb.ListenUDP(tb.NSB, &net.UDPAddr{IP: tb.AddrB, Port: 9001})
	if err != nil {
		return nil, err
	}
	defer blackhole.Close()
	_ = blackhole.SetReadBuffer(256 << 10)
	blast, err := newBenchSender(tb, 9001)
	if err != nil {
		return nil, err
	}
	defer blast.close()
	vethRx := func() float64 { return vethRxPackets(tb) }

	tputWithout := map[int]float64{}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "bench: "+format+"\n", args...) }

	logf("latency without linkem")
	if res.Latency["without"], err = latencyRun(ctx, tx, rx, o); err != nil {
		return nil, err
	}
	for _, size := range o.Sizes {
		logf("throughput without linkem, %d bytes", size)
		r, _, err := throughputRun(ctx, blast, vethRx, size, o)
		if err != nil {
			return nil, err
		}
		tputWithout[size] = r
	}

	if err := tb.InstallQueueRule(); err != nil {
		return nil, err
	}
	child, err := startLinkem(ctx, tb, o, res.Pinned)
	if err != nil {
		return nil, err
	}
	defer child.stop()

	logf("latency with linkem")
	if res.Latency["with"], err = latencyRun(ctx, tx, rx, o); err != nil {
		return nil, err
	}
	res.InternalP50us, res.InternalP99us = child.internalDelay()
	res.SetAdded()
	for _, size := range o.Sizes {
		logf("throughput with linkem, %d bytes", size)
		t, err := throughputWith(ctx, blast, child, size, tputWithout[size], o)
		if err != nil {
			return nil, err
		}
		res.Throughput = append(res.Throughput, t)
	}
	if err := child.stop(); err != nil {
		return nil, err
	}
	return res, nil
}

// unpinProcess lets every thread of this process run on every CPU again.
func unpinProcess() {
	var all unix.CPUSet
	for i := 0; i < runtime.NumCPU(); i++ {
		all.Set(i)
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.SchedSetaffinity(tid, &all)
		}
	}
}

// throughputWith is the throughput run of size-byte datagrams through
// child, with its CPU and kernel drops around it; without is the rate
// without linkem.
func throughputWith(ctx context.Context, blast *benchSender, child *benchChild, size int, without float64, o Options) (linkembench.TputRes, error) {
	var before, after linkembench.ChildReading
	before.QueueFull, before.SocketFull = child.kernelDrops()
	before.User, before.Sys = child.cpu()
	r, offered, err := throughputRun(ctx, blast, child.passed, size, o)
	if err != nil {
		return linkembench.TputRes{}, err
	}
	after.User, after.Sys = child.cpu()
	after.QueueFull, after.SocketFull = child.kernelDrops()
	return linkembench.NewTputRes(size, without, r, offered, before, after, o.Warmup+o.Duration), nil
}

func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
		signal.Stop(ch)
	}()
	return ctx, cancel
}

// benchReceiver counts datagrams arriving in B and, when asked, records
// their one-way latency (send time stamped by the sender of this process).
type benchReceiver struct {
	conn   *net.UDPConn
	pc     *ipv4.PacketConn
	count  atomic.Uint64
	record atomic.Bool
	mu     sync.Mutex
	lat    []int64
	done   chan struct{}
}

var benchEpoch = time.Now()

func nowNS() int64 { return int64(time.Since(benchEpoch)) }

func newBenchReceiver(tb *netnstestbed.Testbed) (*benchReceiver, error) {
	c, err := tb.ListenUDP(tb.NSB, &net.UDPAddr{IP: tb.AddrB, Port: 9000})
	if err != nil {
		return nil, err
	}
	setBuffers(c)
	r := &benchReceiver{conn: c, pc: ipv4.NewPacketConn(c), done: make(chan struct{})}
	go r.loop()
	return r, nil
}

func setBuffers(c *net.UDPConn) {
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
		})
	}
}

func (r *benchReceiver) loop() {
	defer close(r.done)
	msgs := make([]ipv4.Message, 64)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 9000)}
	}
	for {
		n, err := r.pc.ReadBatch(msgs, 0)
		if err != nil {
			return
		}
		r.count.Add(uint64(n))
		if r.record.Load() {
			now := nowNS()
			r.mu.Lock()
			for i := 0; i < n; i++ {
				if msgs[i].N >= 16 {
					r.lat = append(r.lat, now-int64(binary.LittleEndian.Uint64(msgs[i].Buffers[0][8:16])))
				}
			}
			r.mu.Unlock()
		}
	}
}

func (r *benchReceiver) close() {
	r.conn.Close()
	<-r.done
}

type benchSender struct {
	conn *net.UDPConn
	pc   *ipv4.PacketConn
}

func newBenchSender(tb *netnstestbed.Testbed, port int) (*benchSender, error) {
	var c *net.UDPConn
	err := linkem.InNetNS(tb.NSPath(tb.NSA), func() error {
		var err error
		c, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: tb.AddrB, Port: port})
		return err
	})
	if err != nil {
		return nil, err
	}
	setBuffers(c)
	return &benchSender{conn: c, pc: ipv4.NewPacketConn(c)}, nil
}

func (s *benchSender) close() { s.conn.Close() }

// latencyRun sends o.LatN 64-byte datagrams paced at o.LatRate with a
// timerfd (no busy wait, so the receiver on the same CPU is not starved)
// and returns the one-way latency percentiles.
func latencyRun(ctx context.Context, tx *benchSender, rx *benchReceiver, o Options) (linkembench.LatRes, error) {
	timer, err := linkem.NewTimerFD()
	if err != nil {
		return linkembench.LatRes{}, err
	}
	defer timer.Close()
	rx.mu.Lock()
	rx.lat = make([]int64, 0, o.LatN)
	rx.mu.Unlock()
	rx.record.Store(true)
	buf := make([]byte, 64)
	interval := int64(time.Second) / int64(o.LatRate)
	next := nowNS()
	for i := 0; i < o.LatN && ctx.Err() == nil; i++ {
		next += interval
		if d := next - nowNS(); d > 0 {
			timer.Arm(time.Duration(d))
			if err := timer.Wait(); err != nil {
				return linkembench.LatRes{}, err
			}
		}
		binary.LittleEndian.PutUint64(buf[0:8], uint64(i))
		binary.LittleEndian.PutUint64(buf[8:16], uint64(nowNS()))
		if _, err := tx.conn.Write(buf); err != nil {
			return linkembench.LatRes{}, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	rx.record.Store(false)
	rx.mu.Lock()
	lat := append([]int64(nil), rx.lat...)
	rx.mu.Unlock()
	if ctx.Err() != nil {
		return linkembench.LatRes{}, ctx.Err()
	}
	return linkembench.NewLatRes(o.LatRate, o.LatN, lat), nil
}

// throughputRun blasts size-byte datagrams with sendmmsg for
// warmup+duration and returns the rate at which count grows and the rate
// at which datagrams were sent, over the measured part.
func throughputRun(ctx context.Context, tx *benchSender, count func() float64, size int, o Options) (float64, float64, error) {
	const batch = 64
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, size)}
	}
	var sent atomic.Uint64
	stopAt := time.Now().Add(o.Warmup + o.Duration)
	errc := make(chan error, 1)
	go func() {
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			n, err := tx.pc.WriteBatch(msgs, 0)
			if err != nil {
				if errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN) {
					continue
				}
				errc <- err
				return
			}
			sent.Add(uint64(n))
		}
		errc <- nil
	}()
	time.Sleep(o.Warmup)
	c0, s0, t0 := count(), sent.Load(), time.Now()
	time.Sleep(o.Duration)
	c1, s1, t1 := count(), sent.Load(), time.Now()
	if err := <-errc; err != nil {
		return 0, 0, fmt.Errorf("sending: %w", err)
	}
	time.Sleep(300 * time.Millisecond) // let queues drain before the next run
	secs := t1.Sub(t0).Seconds()
	return (c1 - c0) / secs, float64(s1-s0) / secs, ctx.Err()
}

// vethRxPackets is the receive packet counter of B's veth end.
func vethRxPackets(tb *netnstestbed.Testbed) float64 {
	var v float64
	_ = linkem.InNetNS(tb.NSPath(tb.NSB), func() error {
		devs, err := counters.ReadNetDev("/proc/thread-self")
		if err != nil {
			return err
		}
		v = float64(devs[tb.IfB].RxPackets)
		return nil
	})
	return v
}

// benchChild is linkem running as a pinned child process.
type benchChild struct {
	cmd    *exec.Cmd
	addr   string
	client *http.Client
	waited chan error
	once   sync.Once
	err    error
}

func startLinkem(ctx context.Context, tb *netnstestbed.Testbed, o Options, pinned bool) (*benchChild, error) {
	args := []string{o.Bin, "--netns", tb.NSPath(tb.NSB), "--queue", fmt.Sprint(o.Queue),
		"--listen", "127.0.0.1:0", "--log-level", "warn", "--name", "bench", "--busy-poll", o.BusyPoll.String()}
	if pinned {
		args = append([]string{"taskset", "-c", fmt.Sprint(o.LinkemCPU)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// A child started while this process is pinned would inherit the
	// pinning; taskset re-pins it.
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting linkem: %w", err)
	}
	c := &benchChild{cmd: cmd, client: &http.Client{Timeout: 5 * time.Second}, waited: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- a
			}
		}
	}()
	go func() { c.waited <- cmd.Wait() }()
	select {
	case c.addr = <-lines:
		return c, nil
	case err := <-c.waited:
		return nil, fmt.Errorf("linkem exited at start: %v", err)
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("linkem did not print its address within 10s")
	case <-ctx.Done():
		cmd.Process.Kill()
		return nil, ctx.Err()
	}
}

// cpu returns the child's user and system CPU time so far.
func (c *benchChild) cpu() (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0, 0
	}
	// Fields after the command: state is f[0]; utime and stime are the
	// 14th and 15th fields of the line, f[11] and f[12] here, in clock
	// ticks (USER_HZ, 100 on Linux).
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return time.Duration(ut * 1e7), time.Duration(st * 1e7)
}

// internalDelay estimates the p50 and p99 of the child's
// protolab_linkem_added_delay_seconds histogram, in microseconds.
func (c *benchChild) internalDelay() (p50, p99 float64) {
	resp, err := c.client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return math.NaN(), math.NaN()
	}
	defer resp.Body.Close()
	return linkembench.AddedDelayUS(resp.Body)
}

// passed scrapes the child's count of forwarded packets.
func (c *benchChild) passed() float64 {
	resp, err := c.client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return math.NaN()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "protolab_linkem_packets_total{") && strings.Contains(line, `action="passed"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return math.NaN()
}

// kernelDrops scrapes the child's kernel drop counters.
func (c *benchChild) kernelDrops() (queueFull, socketFull float64) {
	resp, err := c.client.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return math.NaN(), math.NaN()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "protolab_linkem_kernel_dropped_packets_total{") {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.Contains(line, `cause="queue_full"`):
			queueFull = v
		case strings.Contains(line, `cause="socket_full"`):
			socketFull = v
		}
	}
	return queueFull, socketFull
}

func (c *benchChild) stop() error {
	c.once.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-c.waited:
			if err != nil {
				c.err = fmt.Errorf("linkem exited with %v", err)
			}
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.waited
			c.err = errors.New("linkem did not stop within 10s of SIGTERM")
		}
	})
	return c.err
}
