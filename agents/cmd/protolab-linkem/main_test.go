package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"protolab/agents/internal/linkembench"
	"protolab/agents/internal/netnstestbed"
	"protolab/agents/linkem"
)

// The test binary doubles as protolab-linkem for the tests that need a
// real process (signals, ip netns exec, the benchmark's child).
const runMainEnv = "PROTOLAB_LINKEM_TEST_RUN_MAIN"

// dialEnv makes the test binary a client of the control socket at its
// value (for the test that runs it as another user): it prints the status
// line of GET /config or the error.
const dialEnv = "PROTOLAB_LINKEM_TEST_DIAL"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if path := os.Getenv(dialEnv); path != "" {
		resp, err := unixClient(path).Get("http://linkem/config")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
		os.Exit(0)
	}
	if os.Geteuid() == 0 {
		netnstestbed.RemoveStale()
	}
	os.Exit(m.Run())
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{"version", []string{"--version"}, 0, "protolab-linkem dev (revision unknown, go", nil},
		{"help gives units and API", []string{"--help"}, 0, "", []string{
			"-delay", "-jitter", "-distribution", "-keep-order", "-loss", "-loss-ge", "-reorder", "-corrupt",
			"-ber", "-duplicate", "-limit", "-seed", "-queue", "-name", "-control", "-listen", "-netns", "mode 0600",
			"listening on unix:PATH", "never serves /config",
			`"10ms"`, `"1.5" and "1.5%" both mean 1.5 percent`, "1e-6",
			"GET  /config", "PUT  /config", "/metrics", "/healthz", "listening on ADDR",
			"protolab_linkem_packets_total{link,action}", "passed|dropped|", "corrupted|duplicated|reordered|overflow",
			"protolab_linkem_added_delay_seconds", "protolab_linkem_held_packets", "protolab_linkem_config_changes_total",
			"protolab_agent_build_info", "--queue-bypass", "SIGTERM", "-busy-poll", "protolab_linkem_busy_polled_packets_total",
		}},
		{"bench help", []string{"bench", "--help"}, 0, "", []string{"-duration", "-sizes", "-linkem-cpu", "Needs root"}},
		{"unknown flag", []string{"--nosuch"}, 2, "", []string{"flag provided but not defined", "--help"}},
		{"stray argument", []string{"extra"}, 2, "", []string{"unexpected arguments: extra"}},
		{"percent out of range", []string{"--loss", "120"}, 2, "", []string{`invalid value "120" for flag -loss: percentage 120 is out of range`}},
		{"duration without unit", []string{"--delay", "20"}, 2, "", []string{`duration "20" has no unit: write e.g. 20ms`}},
		{"bad distribution", []string{"--delay", "1ms", "--jitter", "1ms", "--distribution", "gamma"}, 2, "", []string{`unknown distribution "gamma"`}},
		{"several problems", []string{"--loss", "5", "--loss-ge", "1,30", "--reorder", "10"}, 2, "", []string{
			"invalid configuration", "loss-ge: cannot be combined with loss", "reorder: needs a delay"}},
		{"bad ge", []string{"--loss-ge", "1,0"}, 2, "", []string{"stay in the bad state forever"}},
		{"bad ber", []string{"--ber", "2"}, 2, "", []string{"bit error rate 2 is out of range"}},
		{"queue out of range", []string{"--queue", "70000"}, 2, "", []string{"out of range 0..65535"}},
		{"busy poll out of range", []string{"--busy-poll", "20ms"}, 2, "", []string{"--busy-poll 20ms is out of range 0..10ms"}},
		{"bench busy poll out of range", []string{"bench", "--busy-poll", "-1ms"}, 2, "", []string{"--busy-poll 0..10ms"}},
		{"bad log level", []string{"--log-level", "loud"}, 2, "", []string{"--log-level"}},
		{"bad listen address", []string{"--listen", "127.0.0.1:notaport"}, 1, "", []string{"listen"}},
		{"bench bad size", []string{"bench", "--sizes", "64,x"}, 2, "", []string{"not a payload size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout %q, want prefix %q", stdout.String(), tt.wantStdout)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// requireRoot skips with the reason when the namespace tests cannot run.
func requireRoot(t *testing.T) {
	t.Helper()
	if err := netnstestbed.NFQueueUsable(); err != nil {
		t.Skipf("root integration test skipped: %v", err)
	}
}

// child is protolab-linkem started as a process with `ip netns exec`.
type child struct {
	cmd     *exec.Cmd
	control string // --control's path, from its "listening on unix:PATH" line
	addr    string // --listen's address, from its "listening on ADDR" line
	stderr  *syncBuffer
	done    chan struct{} // closed when the process has exited
	waitErr error
}

// unixClient makes its HTTP requests over the unix socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
}

// startChild starts linkem with args and waits for a "listening on" line
// for each of --control and --listen given.
func startChild(t *testing.T, ns string, args ...string) *child {
	t.Helper()
	full := append([]string{"netns", "exec", ns, os.Args[0]}, args...)
	cmd := exec.Command("ip", full...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, a := range args {
		if a == "--control" || a == "--listen" {
			want++
		}
	}
	lines := make(chan string, want)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- a
			}
		}
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	for ; want > 0; want-- {
		select {
		case a := <-lines:
			if p, ok := strings.CutPrefix(a, "unix:"); ok {
				c.control = p
			} else {
				c.addr = a
			}
		case <-c.done:
			t.Fatalf("linkem exited at start (%v):\n%s", c.waitErr, c.stderr.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("no 'listening on' line within 10s:\n%s", c.stderr.String())
		}
	}
	return c
}

// metric reads one sample from /metrics.
func metric(t *testing.T, tb *netnstestbed.Testbed, addr, name string) float64 {
	t.Helper()
	resp, err := tb.HTTPClient(tb.NSB).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), name+" ") {
			v, _ := strconv.ParseFloat(strings.Fields(sc.Text())[1], 64)
			return v
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// A real process in the namespace: it prints its address, serves the API
// there, holds packets for their delay, and on SIGTERM releases them all
// at once and exits 0, after which the queue bypass lets traffic through.
func TestProcessSIGTERMReleasesHeld(t *testing.T) {
	requireRoot(t)
	tb, err := netnstestbed.New("cm", 3900)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("removing the test bed: %v", err)
		}
	})
	if err := tb.InstallQueueRule(); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, tb.NSB, "--queue", "3900", "--name", "a-b", "--delay", "2s", "--seed", "7",
		"--control", filepath.Join(t.TempDir(), "c.sock"), "--listen", "127.0.0.1:0")

	// The API answers on the control socket, metrics inside the namespace.
	resp, err := unixClient(c.control).Get("http://linkem/config")
	if err != nil {
		t.Fatal(err)
	}
	var applied linkem.Applied
	err = json.NewDecoder(resp.Body).Decode(&applied)
	resp.Body.Close()
	if err != nil || applied.Name != "a-b" || applied.Seed != 7 || time.Duration(applied.Config.Delay) != 2*time.Second {
		t.Fatalf("GET /config: %+v, %v", applied, err)
	}

	rx, err := tb.ListenUDP(tb.NSB, &net.UDPAddr{IP: tb.AddrB, Port: 7100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	var txConn *net.UDPConn
	if err := linkem.InNetNS(tb.NSPath(tb.NSA), func() error {
		var err error
		txConn, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: tb.AddrB, Port: 7100})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { txConn.Close() })
	for i := 0; i < 50; i++ {
		if _, err := txConn.Write([]byte("held packet")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for metric(t, tb, c.addr, `protolab_linkem_held_packets{link="a-b"}`) < 50 {
		if time.Now().After(deadline) {
			t.Fatal("linkem did not hold the 50 packets")
		}
		time.Sleep(10 * time.Millisecond)
	}

	sigAt := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := 0
	buf := make([]byte, 100)
	_ = rx.SetReadDeadline(time.Now().Add(time.Second))
	for got < 50 {
		if _, err := rx.Read(buf); err != nil {
			break
		}
		got++
	}
	took := time.Since(sigAt)
	select {
	case <-c.done:
		if c.waitErr != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", c.waitErr, c.stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("linkem did not exit after SIGTERM")
	}
	t.Logf("SIGTERM: %d held packets delivered within %v", got, took)
	if got != 50 || took > 500*time.Millisecond {
		t.Errorf("%d of 50 held packets arrived within %v of SIGTERM; want all, well before their 2s delay", got, took)
	}
	if !strings.Contains(c.stderr.String(), "count=50") || !strings.Contains(c.stderr.String(), "stopped cleanly") {
		t.Errorf("log lacks the release and the clean stop:\n%s", c.stderr.String())
	}
	if _, err := os.Lstat(c.control); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control socket left behind after exit: %v", err)
	}
	// The queue is gone: --queue-bypass lets packets through.
	for i := 0; i < 5; i++ {
		_, _ = txConn.Write([]byte("after exit"))
	}
	_ = rx.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := rx.Read(buf); err != nil {
		t.Errorf("no packet through after linkem exited: %v", err)
	}
}

// The bench subcommand runs end to end (briefly) and reports numbers.
func TestBenchSmoke(t *testing.T) {
	requireRoot(t)
	t.Setenv(runMainEnv, "1") // the bench's linkem child is this binary
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"bench", "--json", "--duration", "200ms", "--warmup", "50ms",
		"--latency-count", "300", "--linkem-bin", os.Args[0], "--queue", "3901"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("bench exit %d:\n%s", code, stderr.String())
	}
	var res linkembench.Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, stdout.String())
	}
	if len(res.Throughput) != 2 || res.Throughput[0].WithPPS <= 0 || res.Throughput[1].Payload != 1500 ||
		res.Latency["with"].P50us <= 0 || res.Latency["without"].Sent != 300 {
		t.Errorf("bench result %+v", res)
	}
	t.Logf("bench (short run): %s", strings.Join(strings.Fields(stdout.String()), " "))
}

// The benchmark leaves nothing behind.
func TestBenchLeavesNoNamespaces(t *testing.T) {
	requireRoot(t)
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	prefix := "plabt-bn-" + strconv.Itoa(os.Getpid()) + "-"
	if strings.Contains(string(out), prefix) {
		t.Errorf("namespaces left behind:\n%s", out)
	}
}

// The control socket is the only way to /config: mode 0600, its owner's
// requests served, another user's refused even if the mode is loosened;
// the TCP listener serves metrics and answers 404 on /config.
func TestProcessControlSocket(t *testing.T) {
	requireRoot(t)
	tb, err := netnstestbed.New("cs", 3902)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("removing the test bed: %v", err)
		}
	})
	// Under /tmp itself (not t.TempDir's 0700 parent), so that another
	// user can reach the socket once its mode is loosened below.
	dir, err := os.MkdirTemp("", "plt-control-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	c := startChild(t, tb.NSB, "--queue", "3902", "--name", "a-b", "--control", sock, "--listen", "127.0.0.1:0")

	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket mode %v, want a socket with 0600", fi.Mode())
	}
	req, _ := http.NewRequest("PUT", "http://linkem/config", strings.NewReader(`{"delay":"5ms"}`))
	resp, err := unixClient(sock).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("PUT /config on the control socket: %s", resp.Status)
	}

	// TCP: metrics yes, /config no.
	for _, method := range []string{"GET", "PUT"} {
		req, _ := http.NewRequest(method, "http://"+c.addr+"/config", strings.NewReader(`{"delay":"50ms"}`))
		resp, err := tb.HTTPClient(tb.NSB).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s /config over TCP: %s, want 404", method, resp.Status)
		}
	}
	if d := metric(t, tb, c.addr, `protolab_linkem_config_changes_total{link="a-b"}`); d != 1 {
		t.Errorf("config changes %v, want 1 (the PUT on the socket only)", d)
	}

	// Another user: refused by the mode, and by the peer check once the
	// mode is loosened. The test binary, copied where that user can run
	// it, is the client.
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	asNobody := func() string {
		cmd := exec.Command(bin)
		cmd.Env = []string{dialEnv + "=" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if out := asNobody(); !strings.Contains(out, "permission denied") {
		t.Errorf("another user at mode 0600: %q, want permission denied", out)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	out := asNobody()
	t.Logf("another user: at mode 0600 refused by the file mode; at 0666: %q", out)
	// a status line ("200 OK") is a served request; "200" anywhere else may be
	// in the socket's random folder name, which the error quotes
	if strings.HasPrefix(out, "200") || !strings.HasPrefix(out, "error:") {
		t.Errorf("another user at mode 0666: %q, want the connection refused", out)
	}
	// linkem logs the refusal before it closes the connection, but its
	// stderr reaches c.stderr through exec's copying goroutine, which may
	// not have copied the line yet when the client has already seen the
	// reset (a rehearsal failed there with the line missing).
	logged := func() bool { return strings.Contains(c.stderr.String(), "peer_uid=65534") }
	for deadline := time.Now().Add(5 * time.Second); !logged() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !logged() {
		t.Errorf("the refusal is not logged:\n%s", c.stderr.String())
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control socket left behind after exit: %v", err)
	}
}
