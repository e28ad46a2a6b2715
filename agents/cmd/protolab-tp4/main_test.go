package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write from one goroutine and read
// from another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := run(ctx, args, &stdout, &stderr)
	return c, stdout.String(), stderr.String()
}

func summary(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one summary line, got %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	return m
}

var listening = regexp.MustCompile(`listening on (\S+)`)

func TestSendRecv(t *testing.T) {
	var rout, rerr syncBuffer
	code := make(chan int, 1)
	transport := []string{"--ack", "selective", "--retransmit", "300ms", "--link-kbit", "20000", "--tsdu-size", "4096"}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		code <- run(ctx, append([]string{"recv", "--addr", "127.0.0.1:0", "--linger", "100ms"}, transport...), &rout, &rerr)
	}()
	var addr string
	for deadline := time.Now().Add(5 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(rerr.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("recv did not listen: %s", rerr.String())
	}
	c, out, errOut := runCmd(append([]string{"send", "--addr", addr, "--tsdus", "12", "--expedited-rate", ".33", "--expedited", "nbs"}, transport...)...)
	if c != 0 {
		t.Fatalf("send exited %d: %s %s", c, out, errOut)
	}
	s := summary(t, out)
	if s["completed"] != true || s["tsdus_submitted"] != 12.0 || s["expedited_submitted"] != 4.0 || s["expedited_every"] != 3.0 {
		t.Errorf("send summary %v", s)
	}
	if rc := <-code; rc != 0 {
		t.Fatalf("recv exited %d: %s", rc, rerr.String())
	}
	r := summary(t, rout.String())
	if r["completed"] != true || r["tsdus_delivered"] != 12.0 || r["user_expedited"] != 4.0 || r["user_tsdus_corrupt"] != 0.0 {
		t.Errorf("recv summary %v", r)
	}
	for _, k := range []string{"throughput_efficiency", "per_octet_delay_seconds", "expedited_delay_seconds", "receive_buffer_avg_octets", "receive_buffer_max_octets"} {
		if _, ok := r[k].(float64); !ok {
			t.Errorf("recv summary lacks %s: %v", k, r)
		}
	}
}

func TestSim(t *testing.T) {
	c, out, errOut := runCmd("sim", "--table", "3", "--tsdus", "2", "--ber", "1e-4", "--ack", "selective")
	if c != 0 {
		t.Fatalf("sim exited %d: %s %s", c, out, errOut)
	}
	m := summary(t, out)
	if m["tpdu_size_octets"] != 128.0 || m["retransmit_seconds"] != 0.65 || m["expedited_mechanism"] != "nbs" || m["ack"] != "selective" {
		t.Errorf("--table 3 defaults not taken: %v", m)
	}
	if e, _ := m["throughput_efficiency"].(float64); e <= 0 || e > 1 {
		t.Errorf("efficiency %v", m["throughput_efficiency"])
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage"},
		{[]string{"--help"}, 0, "Usage"},
		{[]string{"--version"}, 0, "protolab-tp4"},
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"send", "--help"}, 0, "-retransmit"},
		{[]string{"send"}, 2, "--addr missing"},
		{[]string{"recv", "--ack", "go-back-n"}, 2, "want one-for-one or selective"},
		{[]string{"recv", "--tpdu-size", "1000"}, 2, "power of two"},
		{[]string{"sim", "--ber", "0.5"}, 2, "--ber 0.5"},
		{[]string{"sim", "--expedited-rate", "2"}, 2, "--expedited-rate"},
		{[]string{"sim", "--table", "4"}, 2, "--table 4"},
		{[]string{"send", "--addr", "x", "extra"}, 2, "unexpected arguments"},
	} {
		c, out, errOut := runCmd(tc.args...)
		if c != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), output %q lacks %q", tc.args, c, tc.code, out+errOut, tc.want)
		}
	}
}
