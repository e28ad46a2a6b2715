package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe buffer for run's log output.
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
		{"version", []string{"--version"}, 0, "protolab-agent dev (revision unknown, go", nil},
		{"help gives units", []string{"--help"}, 0, "", []string{
			"-listen", "-mgmt-interface", "-cgroup-root", "-proc", "-version",
			"(default \":9100\")", "(default \"eth0\")", "lo is always left out",
			"nanoseconds", "microseconds", "seconds", "cores", "bytes",
		}},
		{"unknown flag", []string{"--nosuch"}, 2, "", []string{"flag provided but not defined"}},
		{"stray argument", []string{"extra"}, 2, "", []string{"unexpected arguments: extra"}},
		{"bad listen address", []string{"--listen", "127.0.0.1:notaport"}, 1, "", []string{"listen on"}},
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

var listenRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// TestRunServesAndStopsOnSIGTERM runs the agent against the fixture trees,
// scrapes it, then sends the process SIGTERM and expects a clean exit 0.
func TestRunServesAndStopsOnSIGTERM(t *testing.T) {
	fixtures := filepath.Join("..", "..", "metrics", "testdata")
	args := []string{
		"--listen", "127.0.0.1:0",
		"--mgmt-interface", "eth0,eth2",
		"--cgroup-root", filepath.Join(fixtures, "cgroup", "v1-split"),
		"--proc", filepath.Join(fixtures, "proc"),
	}
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, &stdout, &stderr) }()

	var addr string
	deadline := time.Now().Add(5 * time.Second)
	for addr == "" {
		if m := listenRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("run exited early with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent did not start listening:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"protolab_cpu_seconds_total 2.75",
		"protolab_cpu_quota_cores 1.5",
		"protolab_cpu_throttled_seconds_total 0.25",
		`protolab_interface_transmit_bytes_total{interface="eth1"}`,
		`protolab_agent_build_info{goversion=`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, unwanted := range []string{`interface="eth0"`, `interface="eth2"`, `interface="lo"`} {
		if strings.Contains(string(body), unwanted) {
			t.Errorf("/metrics contains excluded %s", unwanted)
		}
	}

	// run has registered its SIGTERM handler before logging "listening",
	// so this does not kill the test binary.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after SIGTERM = %d, want 0:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "stopped cleanly") {
		t.Errorf("log lacks clean stop:\n%s", stderr.String())
	}
}
