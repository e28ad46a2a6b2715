package spims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"protolab/agents/transport"
)

func TestRequestResponseEveryTransport(t *testing.T) {
	for _, name := range transport.Names() {
		for _, host := range []string{"127.0.0.1", "::1"} {
			t.Run(name+"/"+host, func(t *testing.T) {
				addr := responder(t, name, host)
				for _, sz := range []struct{ req, resp int }{{0, 0}, {1, 1}, {32, 32}, {1024, 1024}, {65000, 65000}, {32, 65000}, {65000, 0}} {
					res, err := runJob(t, jobJSON(map[string]any{
						"procedure": "request_response", "transport": name, "target": addr, "source": host, "iterations": 3,
						"size": map[string]any{"dist": "constant", "value": sz.req}, "response_size": map[string]any{"dist": "constant", "value": sz.resp},
						"samples": true,
					}))
					if err != nil {
						t.Fatalf("%d/%d bytes: %v", sz.req, sz.resp, err)
					}
					if res.Completed != 3 || res.Stopped != StopIterations || len(res.Samples) != 3 {
						t.Fatalf("%d/%d bytes: completed %d, stopped %s, %d samples", sz.req, sz.resp, res.Completed, res.Stopped, len(res.Samples))
					}
					if res.SentBytes != int64(3*sz.req) || res.ReceivedBytes != int64(3*sz.resp) {
						t.Errorf("%d/%d bytes: sent %d, received %d", sz.req, sz.resp, res.SentBytes, res.ReceivedBytes)
					}
				}
			})
		}
	}
}

func TestBulkGetDeliversExactly(t *testing.T) {
	for _, name := range transport.Names() {
		t.Run(name, func(t *testing.T) {
			addr := responder(t, name, "127.0.0.1")
			tr, _ := transport.Get(name)
			js := jobJSON(map[string]any{"procedure": "bulk_get", "transport": name, "target": addr, "iterations": 2, "count": 300,
				"size": map[string]any{"dist": "constant", "value": 1000}})
			if !tr.Properties().Stream {
				if _, err := ParseJob([]byte(js)); err == nil || !strings.Contains(err.Error(), "not a stream") {
					t.Fatalf("bulk_get over %s: %v, want a refusal", name, err)
				}
				return
			}
			res, err := runJob(t, js)
			if err != nil {
				t.Fatal(err)
			}
			if res.ReceivedBytes != 2*300*1000 || res.Bulk.TransferBytes != 300*1000 || res.Completed != 2 {
				t.Fatalf("received %d bytes in %d transfers", res.ReceivedBytes, res.Completed)
			}
			if res.Bulk.ReceiverBytesPerSecond.Count != 2 || !(res.Bulk.SenderBytesPerSecond.Mean > 0) {
				t.Errorf("throughput %+v / %+v", res.Bulk.ReceiverBytesPerSecond, res.Bulk.SenderBytesPerSecond)
			}
		})
	}
}

func TestConnectDisconnect(t *testing.T) {
	for _, name := range transport.Names() {
		t.Run(name, func(t *testing.T) {
			addr := responder(t, name, "127.0.0.1")
			tr, _ := transport.Get(name)
			for _, exchange := range []bool{false, true} {
				job := map[string]any{"procedure": "connect_disconnect", "transport": name, "target": addr, "iterations": 5}
				if exchange {
					job["size"] = map[string]any{"dist": "constant", "value": 10}
				}
				if !tr.Properties().Connected {
					if _, err := ParseJob([]byte(jobJSON(job))); err == nil {
						t.Fatalf("connect_disconnect over %s accepted", name)
					}
					return
				}
				res, err := runJob(t, jobJSON(job))
				if err != nil {
					t.Fatal(err)
				}
				if res.Completed != 5 || res.Timeouts != 0 {
					t.Fatalf("exchange %v: completed %d, timeouts %d", exchange, res.Completed, res.Timeouts)
				}
				if want := int64(0); !exchange && res.SentBytes != want {
					t.Errorf("no exchange but %d bytes sent", res.SentBytes)
				}
				if exchange && res.ReceivedBytes != 50 {
					t.Errorf("exchange: received %d bytes, want 50", res.ReceivedBytes)
				}
				if len(res.Paths) != 1 || len(res.Paths[0].Tuning) == 0 {
					t.Errorf("paths %+v", res.Paths)
				}
			}
		})
	}
}

// blackHole accepts TCP connections and never reads or answers.
func blackHole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// closedPort is a TCP and UDP port nobody listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestDualMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		second    func(t *testing.T) string
		wantErr2  bool // path 2 fails to dial or dies
		minWins2  int
	}{
		{"both alive", "tcp", func(t *testing.T) string { return responder(t, "tcp", "127.0.0.1") }, false, 0},
		{"second a black hole", "tcp", blackHole, false, 0},
		{"second a closed port", "tcp", closedPort, true, 0},
		{"udp, second a closed port", "udp", closedPort, false, 0},
		{"quic, second alive", "quic", func(t *testing.T) string { return responder(t, "quic", "127.0.0.1") }, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := responder(t, tc.transport, "127.0.0.1")
			second := tc.second(t)
			res, err := runJob(t, jobJSON(map[string]any{
				"procedure": "request_response", "transport": tc.transport, "target": addr, "target2": second,
				"iterations": 200, "timeout": "2s", "options": udpQuick(tc.transport),
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Dual || len(res.Paths) != 2 {
				t.Fatalf("dual %v, %d paths", res.Dual, len(res.Paths))
			}
			if res.Completed != 200 || res.Timeouts != 0 {
				t.Fatalf("completed %d, timeouts %d", res.Completed, res.Timeouts)
			}
			w1, w2 := res.Paths[0].Wins, res.Paths[1].Wins
			if w1+w2 != 200 {
				t.Errorf("wins %d + %d != 200", w1, w2)
			}
			if (res.Paths[1].Error != "") != tc.wantErr2 {
				t.Errorf("path 2 error %q, want one: %v", res.Paths[1].Error, tc.wantErr2)
			}
			if tc.name != "both alive" && !strings.HasPrefix(tc.name, "quic") && w2 != 0 {
				t.Errorf("a dead path won %d times", w2)
			}
			t.Logf("wins %d/%d, path 2: %s", w1, w2, res.Paths[1].Error)
		})
	}
}

func udpQuick(name string) map[string]string {
	if name == "udp" {
		return map[string]string{"timeout": "50ms", "retries": "2"}
	}
	return nil
}

func TestDualAllPathsDead(t *testing.T) {
	res, err := runJob(t, jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp",
		"target": closedPort(t), "target2": closedPort(t), "iterations": 3}))
	if err == nil || !strings.Contains(err.Error(), "path 1") || !strings.Contains(err.Error(), "path 2") {
		t.Fatalf("err = %v, want both paths' errors", err)
	}
	// a result all the same: nothing measured, the error and each path's own
	if res == nil || res.Stopped != "error" || res.Error != err.Error() || res.Completed != 0 || len(res.Paths) != 2 ||
		res.Paths[0].Error == "" || res.Paths[1].Error == "" {
		t.Fatalf("result %+v, want stopped=error with both paths' errors", res)
	}
}

// script is a fake Conn at the unit boundary: it answers requests itself,
// dropping the answers to the requests in drop and delaying those in slow.
type script struct {
	mu       sync.Mutex
	replies  chan []byte
	deadline time.Time
	drop     map[uint32]bool
	slow     map[uint32]time.Duration
	wake     chan struct{}
}

func newScript(drop []uint32, slow map[uint32]time.Duration) *script {
	s := &script{replies: make(chan []byte, 16), drop: map[uint32]bool{}, slow: slow, wake: make(chan struct{}, 1)}
	for _, d := range drop {
		s.drop[d] = true
	}
	return s
}

func (s *script) WriteMsg(p []byte) error {
	h, err := parseHeader(p)
	if err != nil {
		return err
	}
	if s.drop[h.seq] {
		return nil
	}
	r := appendMsg(nil, header{op: opResponse, seq: h.seq}, int(h.a))
	time.AfterFunc(s.slow[h.seq], func() { s.replies <- r })
	return nil
}

func (s *script) ReadMsg([]byte) ([]byte, error) {
	s.mu.Lock()
	dl := s.deadline
	s.mu.Unlock()
	t := time.NewTimer(time.Until(dl))
	defer t.Stop()
	select {
	case r := <-s.replies:
		return r, nil
	case <-t.C:
		return nil, &net.OpError{Op: "read", Err: timeoutErr{}}
	case <-s.wake:
		return nil, &net.OpError{Op: "read", Err: timeoutErr{}}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func (s *script) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	s.mu.Unlock()
	if !t.After(time.Now()) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return nil
}
func (s *script) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (s *script) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (s *script) Tuning() map[string]string   { return nil }
func (s *script) Counters() map[string]uint64 { return nil }
func (s *script) SetDSCP(int) error           { return nil }
func (s *script) Close() error                { return nil }

func TestTimeoutsAndLateCounted(t *testing.T) {
	s := newScript([]uint32{2, 5}, map[uint32]time.Duration{3: 60 * time.Millisecond, 4: 300 * time.Millisecond})
	cfg := RRConfig{Limits: Limits{Iterations: 8, Timeout: 150 * time.Millisecond, LateBound: 40 * time.Millisecond}, Size: Const(8, Bytes)}
	t0 := time.Now()
	out, err := RequestResponse(context.Background(), []*Path{{Conn: s}}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Rec
	// 2 and 5 dropped, 4 answered after its timeout (then discarded as stale).
	if rec.Count() != 5 || rec.timeouts != 3 || rec.late < 1 {
		t.Fatalf("completed %d, timeouts %d, late %d; want 5, 3, 1", rec.Count(), rec.timeouts, rec.late)
	}
	if len(rec.lateAt) != rec.late || len(rec.timeoutAt) != 3 || rec.lateAt[0] < t0.UnixNano() {
		t.Errorf("marks late %v timeouts %v", rec.lateAt, rec.timeoutAt)
	}
	if s := rec.Stats(); s.Max < 0.06 || s.Max > 0.15 {
		t.Errorf("max %v, want the 60 ms one", s.Max)
	}
}

func TestTimeLimitAndDelay(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	res, err := runJob(t, jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp", "target": addr,
		"iterations": 0, "time_limit": "300ms", "delay": map[string]any{"dist": "constant", "value": "20ms"}}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopTimeLimit || res.Completed < 5 || res.Completed > 16 {
		t.Fatalf("stopped %s after %d iterations, want the time limit after about 14", res.Stopped, res.Completed)
	}
	if e := float64(res.ElapsedSeconds); e < 0.29 || e > 1 {
		t.Errorf("elapsed %v s", e)
	}
}

func TestInterrupted(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	p, err := ParseJob([]byte(jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp", "target": addr,
		"iterations": 0, "time_limit": "1h", "delay": map[string]any{"dist": "constant", "value": "5ms"}})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, p, nil)
	if err != nil || res.Stopped != StopInterrupted || res.Completed == 0 {
		t.Fatalf("err %v, stopped %s, completed %d", err, res.Stopped, res.Completed)
	}
}

func TestResolveRejects(t *testing.T) {
	for _, tc := range []struct {
		job  string
		want string
	}{
		{`{"transport":"tcp","target":"x:1"}`, "procedure missing"},
		{`{"procedure":"ping","transport":"tcp","target":"x:1"}`, "request_response, bulk_get or connect_disconnect"},
		{`{"procedure":"request_response","transport":"pigeon","target":"x:1"}`, "registered: mptcp, quic, sctp, tcp, tls, udp"},
		{`{"procedure":"request_response","transport":"tcp"}`, "target missing"},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","speed":3}`, "unknown field"},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","timeout":"10"}`, "timeout \"10\""},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","iterations":0}`, "time_limit, which is missing"},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","size":{"dist":"constant","value":"32"}}`, "want a number"},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","delay":{"dist":"constant","value":5}}`, "duration string"},
		{`{"procedure":"request_response","transport":"udp","target":"x:1","size":{"dist":"constant","value":70000}}`, "more than one udp message"},
		{`{"procedure":"bulk_get","transport":"udp","target":"x:1"}`, "not a stream"},
		{`{"procedure":"connect_disconnect","transport":"udp","target":"x:1"}`, "no connection setup"},
		{`{"procedure":"bulk_get","transport":"tcp","target":"x:1","size":{"dist":"uniform","min":1,"max":9}}`, "constant"},
		{`{"procedure":"bulk_get","transport":"tcp","target":"x:1","target2":"y:1"}`, "dual mode"},
		{`{"procedure":"request_response","transport":"tcp","target":"x:1","options":{"warp":"9"}}`, "unknown knob \"warp\""},
	} {
		_, err := ParseJob([]byte(tc.job))
		var bj *BadJob
		if err == nil || !errors.As(err, &bj) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a BadJob with %q", tc.job, err, tc.want)
		}
	}
}

func TestResolveUnavailable(t *testing.T) {
	tr, _ := transport.Get("sctp")
	if tr.Available() == nil {
		t.Skip("this kernel has SCTP")
	}
	_, err := ParseJob([]byte(`{"procedure":"request_response","transport":"sctp","target":"127.0.0.1:1"}`))
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestResultJSON(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	res, err := runJob(t, jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp", "target": addr, "iterations": 10, "seed": 7,
		"size": map[string]any{"dist": "uniform", "min": 10, "max": 20}, "late_bound": "1ns"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
		t.Fatal("not one line")
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "seconds", "late_at_unix_ns", "paths", "completed", "rate_per_second"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result lacks %q: %s", k, buf.String())
		}
	}
	if _, ok := m["samples_seconds"]; ok {
		t.Error("samples without being asked")
	}
	if res.Late != 10 || len(res.LateAtUnixNs) != 10 {
		t.Errorf("late %d with a 1 ns bound", res.Late)
	}
	if res.Size != "uniform(min=10, max=20 bytes)" {
		t.Errorf("size %q", res.Size)
	}
}

func TestLateSecondsAndBlockMaxima(t *testing.T) {
	r := &Recorder{LateBound: 10 * time.Millisecond, Block: 3}
	start := time.Unix(100, 0)
	for i, ms := range []int{1, 20, 2, 3, 4, 30, 5} {
		r.Add(time.Duration(ms)*time.Millisecond, start.Add(time.Duration(i)*time.Second))
	}
	if len(r.lateD) != 2 || r.lateD[0] != 0.02 || r.lateD[1] != 0.03 {
		t.Fatalf("late seconds %v, want [0.02 0.03]", r.lateD)
	}
	if len(r.lateAt) != 2 || r.lateAt[1] != start.Add(5*time.Second).UnixNano() {
		t.Fatalf("late marks %v", r.lateAt)
	}
	want := []float64{0.02, 0.03, 0.005} // blocks {1,20,2} {3,4,30} {5}
	if len(r.blockMax) != len(want) {
		t.Fatalf("block maxima %v, want %v", r.blockMax, want)
	}
	for i := range want {
		if r.blockMax[i] != want[i] {
			t.Fatalf("block maxima %v, want %v", r.blockMax, want)
		}
	}
}
