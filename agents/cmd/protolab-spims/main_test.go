package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"protolab/agents/spims"
	"protolab/agents/transport"
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

var listening = regexp.MustCompile(`listening on (\S+)`)

// startServe runs `serve` until the test ends and returns its addresses.
func startServe(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"serve"}, args...), nil, &stderr, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("serve exited %d: %s", c, stderr.String())
			}
		case <-time.After(5 * time.Second):
			t.Error("serve did not stop")
		}
	})
	want := strings.Count(args[len(args)-1], ",") + 1
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindAllStringSubmatch(stderr.String(), -1); len(m) == want {
			var out []string
			for _, x := range m {
				out = append(out, x[1])
			}
			return out
		}
	}
	t.Fatalf("serve did not listen: %s", stderr.String())
	return nil
}

func runCmd(args []string, stdin string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := run(ctx, args, strings.NewReader(stdin), &stdout, &stderr)
	return c, stdout.String(), stderr.String()
}

func TestServeAndRun(t *testing.T) {
	addrs := startServe(t, "--transport", "tcp", "--listen", "127.0.0.1:0,127.0.0.1:0")
	for _, tc := range []struct {
		name string
		job  map[string]any
	}{
		{"request_response", map[string]any{"procedure": "request_response", "iterations": 50, "samples": true}},
		{"dual", map[string]any{"procedure": "request_response", "iterations": 50, "target2": addrs[1]}},
		{"bulk_get", map[string]any{"procedure": "bulk_get", "iterations": 2, "count": 100}},
		{"connect_disconnect", map[string]any{"procedure": "connect_disconnect", "iterations": 5, "size": map[string]any{"dist": "constant", "value": 0}}},
		{"bulk_get marked, virtual memory", map[string]any{"procedure": "bulk_get", "iterations": 2, "count": 100, "options": map[string]string{"dscp": "af41"},
			"source_data": map[string]any{"access": "virtual_memory"}, "destination_data": map[string]any{"access": "virtual_memory"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.job["transport"], tc.job["target"] = "tcp", addrs[0]
			b, _ := json.Marshal(tc.job)
			code, out, errOut := runCmd([]string{"run", "--job", "-"}, string(b))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Count(out, "\n") != 1 {
				t.Fatalf("stdout is not one line: %q", out)
			}
			var res spims.Result
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if res.Schema != spims.Schema || res.Completed == 0 || res.Stopped != spims.StopIterations {
				t.Errorf("result %s", out)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	sctp, _ := transport.Get("sctp")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"no command", nil, "", 2, "Usage"},
		{"help", []string{"--help"}, "", 0, "Examples"},
		{"run help", []string{"run", "--help"}, "", 0, "-job"},
		{"bad json", []string{"run", "--job", "-"}, "{", 2, "job:"},
		{"no job", []string{"run"}, "", 2, "--job missing"},
		{"unknown transport", []string{"run", "--job", "-"}, `{"procedure":"request_response","transport":"x","target":"127.0.0.1:1"}`, 2, "registered: mptcp, quic, sctp, tcp, tls, udp"},
		{"bad knob value", []string{"run", "--job", "-"}, `{"procedure":"request_response","transport":"tcp","target":"127.0.0.1:1","options":{"user_timeout":"soon"}}`, 2, "user_timeout"},
		{"refused", []string{"run", "--job", "-"}, `{"procedure":"request_response","transport":"tcp","target":"127.0.0.1:1"}`, 1, "connection refused"},
		{"serve without listen", []string{"serve"}, "", 2, "--listen missing"},
		{"serve unknown knob", []string{"serve", "--listen", "127.0.0.1:0", "--option", "warp=9"}, "", 2, "unknown knob"},
		{"serve bad dscp", []string{"serve", "--listen", "127.0.0.1:0", "--option", "dscp=gold"}, "", 2, "knob dscp"},
		{"help has the data fields", []string{"--help"}, "", 0, `"source_data": {"access": "file"`},
		{"relative source", []string{"run", "--job", "-"}, `{"procedure":"bulk_get","transport":"tcp","target":"127.0.0.1:1","source_data":{"access":"file","path":"data"}}`, 2, "is relative"},
		{"unknown access", []string{"run", "--job", "-"}, `{"procedure":"bulk_get","transport":"tcp","target":"127.0.0.1:1","destination_data":{"access":"tape"}}`, 2, `access "tape"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(tc.args, tc.stdin)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d), output %q lacks %q", code, tc.code, out+errOut, tc.want)
			}
			if code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 && tc.want != "Usage" {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
	t.Run("unavailable", func(t *testing.T) {
		if sctp.Available() == nil {
			t.Skip("this kernel has SCTP")
		}
		code, _, errOut := runCmd([]string{"run", "--job", "-"}, `{"procedure":"request_response","transport":"sctp","target":"127.0.0.1:1"}`)
		if code != 3 || !strings.Contains(errOut, "kernel has no SCTP") {
			t.Errorf("exit %d: %s", code, errOut)
		}
		if code, _, _ := runCmd([]string{"serve", "--transport", "sctp", "--listen", "127.0.0.1:0"}, ""); code != 3 {
			t.Errorf("serve over sctp: exit %d", code)
		}
	})
}

// A bulk source the responder cannot read is the job's fault: exit 2,
// with the responder's reason, and a result line that says error.
func TestResponderRefusalExit(t *testing.T) {
	addr := startServe(t, "--transport", "tcp", "--option", "dscp=cs1", "--listen", "127.0.0.1:0")[0]
	missing := t.TempDir() + "/missing"
	code, out, errOut := runCmd([]string{"run", "--job", "-"}, `{"procedure":"bulk_get","transport":"tcp","target":"`+addr+`","source_data":{"access":"file","path":"`+missing+`"}}`)
	if code != 2 || !strings.Contains(errOut, "responder refused") || !strings.Contains(errOut, missing) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"stopped":"error"`) {
		t.Errorf("result %q", out)
	}
}

func TestTransportsList(t *testing.T) {
	code, out, _ := runCmd([]string{"transports", "--knobs"}, "")
	if code != 0 {
		t.Fatal(code)
	}
	for _, n := range transport.Names() {
		if !regexp.MustCompile(`(?m)^` + n + ` +(available|unavailable) `).MatchString(out) {
			t.Errorf("no line for %s in\n%s", n, out)
		}
	}
	if !strings.Contains(out, "user_timeout") {
		t.Error("knobs not listed")
	}
	t.Log("\n" + out)
}

func TestMetricsHaveHelp(t *testing.T) {
	addr := startServe(t, "--transport", "udp", "--listen", "127.0.0.1:0")[0]
	live := &spims.Live{Procedure: spims.ProcRequestResponse}
	p, err := spims.ParseJob([]byte(`{"procedure":"request_response","transport":"udp","target":"` + addr + `","iterations":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spims.Run(context.Background(), p, live); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		live *spims.Live
		want []string
	}{
		{live, []string{"protolab_spims_round_trip_seconds", "protolab_spims_requests_total", "protolab_spims_timeouts_total", "protolab_spims_late_total", "protolab_agent_build_info"}},
		{&spims.Live{}, []string{"protolab_spims_served_requests_total", "protolab_spims_connections"}},
	} {
		reg, err := registry(tc.live)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, mf := range mfs {
			if mf.GetHelp() == "" {
				t.Errorf("%s has no HELP", mf.GetName())
			}
			got[mf.GetName()] = true
			if mf.GetName() == "protolab_spims_round_trip_seconds" && mf.GetMetric()[0].GetHistogram().GetSampleCount() != 5 {
				t.Errorf("round trips counted %d", mf.GetMetric()[0].GetHistogram().GetSampleCount())
			}
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("no %s", w)
			}
		}
	}
}

// serve bounds a request by its transport's message: over udp a request
// for one byte more than a datagram carries (the 13-byte header's op 1,
// a = 65491) is answered with a refusal naming udp's 65490, and serve goes
// on answering jobs.
func TestServeRefusesPastItsTransport(t *testing.T) {
	addr := startServe(t, "--transport", "udp", "--listen", "127.0.0.1:0")[0]
	udp, _ := transport.Get("udp")
	c, err := udp.Dial(context.Background(), addr, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := []byte{1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(req[5:], uint32(spims.MaxPayload(udp)+1))
	if err := c.WriteMsg(req); err != nil {
		t.Fatal(err)
	}
	m, err := c.ReadMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "response of 65491 payload bytes, more than one message of this transport carries (65490)"; len(m) < 13 || m[0] != 0x84 || !strings.Contains(string(m[13:]), want) {
		t.Fatalf("answer % x, want opError naming %q", m[:min(len(m), 13)], want)
	}
	job, _ := json.Marshal(map[string]any{"procedure": "request_response", "transport": "udp", "target": addr, "iterations": 5})
	if code, _, errOut := runCmd([]string{"run", "--job", "-"}, string(job)); code != 0 {
		t.Fatalf("a job after the refusal: exit %d: %s", code, errOut)
	}
}
