package spims

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"protolab/agents/transport"
)

// randomFile writes n seeded random bytes to a file in dir.
func randomFile(t *testing.T, dir string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, "source")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// repeated is b over and over, n bytes.
func repeated(b []byte, n int) []byte {
	out := make([]byte, 0, n+len(b))
	for len(out) < n {
		out = append(out, b...)
	}
	return out[:n]
}

// bulk_get from a file at the responder to a file at the initiator: the
// destination holds the source's bytes in order, from the start again at
// its end, across units and transfers.
func TestBulkGetFileToFile(t *testing.T) {
	for _, name := range []string{"tcp", "tls", "quic", "mptcp"} {
		for _, fileBytes := range []int{2500, 300} {
			t.Run(fmt.Sprintf("%s/%d-byte_file", name, fileBytes), func(t *testing.T) {
				addr := responder(t, name, "127.0.0.1")
				dir := t.TempDir()
				src, content := randomFile(t, dir, fileBytes)
				dst := filepath.Join(dir, "received")
				os.WriteFile(dst, []byte("left from an earlier run"), 0o644)
				res, err := runJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": name, "target": addr,
					"iterations": 2, "count": 7, "size": map[string]any{"dist": "constant", "value": 1000},
					"source_data": map[string]any{"access": "file", "path": src}, "destination_data": map[string]any{"access": "file", "path": dst}}))
				if err != nil {
					t.Fatal(err)
				}
				if res.Completed != 2 || res.ReceivedBytes != 14000 {
					t.Fatalf("completed %d, received %d bytes", res.Completed, res.ReceivedBytes)
				}
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatal(err)
				}
				if want := repeated(content, 14000); !bytes.Equal(got, want) {
					t.Fatalf("destination: %d bytes, not the %d-byte source repeated to 14000", len(got), fileBytes)
				}
				if res.SourceData.String() != "file "+src || res.DestinationData.String() != "file "+dst {
					t.Errorf("result says source %v, destination %v", res.SourceData, res.DestinationData)
				}
			})
		}
	}
}

func TestVirtualMemory(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	vm := map[string]any{"access": "virtual_memory"}
	res, err := runJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": addr, "iterations": 3, "count": 50,
		"size": map[string]any{"dist": "constant", "value": 10000}, "source_data": vm, "destination_data": vm}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 3 || res.ReceivedBytes != 3*50*10000 || res.DestinationData.Access != AccessVirtualMemory {
		t.Fatalf("bulk_get: completed %d, received %d, destination %v", res.Completed, res.ReceivedBytes, res.DestinationData)
	}
	res, err = runJob(t, jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp", "target": addr, "iterations": 20,
		"size": map[string]any{"dist": "uniform", "min": 0, "max": 20000}, "source_data": vm}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 20 || res.SourceData.Access != AccessVirtualMemory {
		t.Fatalf("request_response: completed %d, source %v", res.Completed, res.SourceData)
	}
}

// A request_response source file: the requests' payloads, in order, are
// the file repeated. A responder here keeps what it receives.
func TestRequestsFromFile(t *testing.T) {
	tr, _ := transport.Get("tcp")
	ln, err := tr.Listen("127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got bytes.Buffer
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		for {
			m, err := c.ReadMsg(nil)
			if err != nil {
				done <- nil
				return
			}
			h, _ := parseHeader(m)
			got.Write(m[Header:])
			if err := c.WriteMsg(appendMsg(nil, header{op: opResponse, seq: h.seq}, int(h.a))); err != nil {
				done <- err
				return
			}
		}
	}()
	src, content := randomFile(t, t.TempDir(), 777)
	res, err := runJob(t, jobJSON(map[string]any{"procedure": "request_response", "transport": "tcp", "target": ln.Addr().String(), "iterations": 40,
		"size": map[string]any{"dist": "uniform", "min": 0, "max": 2000}, "response_size": map[string]any{"dist": "constant", "value": 8},
		"source_data": map[string]any{"access": "file", "path": src}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if int64(got.Len()) != res.SentBytes || !bytes.Equal(got.Bytes(), repeated(content, got.Len())) {
		t.Fatalf("requests carried %d bytes (sent %d), not the source repeated", got.Len(), res.SentBytes)
	}
}

func TestDataErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	src, _ := randomFile(t, dir, 10)
	rr := `"procedure":"request_response","transport":"tcp","target":"127.0.0.1:1"`
	bulk := `"procedure":"bulk_get","transport":"tcp","target":"127.0.0.1:1"`
	for _, tc := range []struct {
		job  string
		want string
	}{
		{`{` + rr + `,"source_data":{"access":"disk"}}`, `source_data: access "disk": memory, virtual_memory or file`},
		{`{` + rr + `,"source_data":{}}`, "source_data: access missing"},
		{`{` + rr + `,"source_data":{"access":"file","path":"data/x"}}`, `path "data/x" is relative`},
		{`{` + rr + `,"source_data":{"access":"file"}}`, "access file needs a path"},
		{`{` + rr + `,"source_data":{"access":"memory","path":"/x"}}`, "path is for access file"},
		{`{` + rr + `,"source_data":{"access":"file","path":"` + dir + `/missing"}}`, "no such file"},
		{`{` + rr + `,"source_data":{"access":"file","path":"` + empty + `"}}`, empty + " is empty"},
		{`{` + rr + `,"source_data":{"access":"file","path":"` + dir + `"}}`, "is a directory"},
		{`{` + rr + `,"source_data":{"access":"file","path":"` + src + `"},"target2":"127.0.0.1:2"}`, "dual mode"},
		{`{` + rr + `,"destination_data":{"access":"memory"}}`, "destination_data is for bulk_get"},
		{`{` + rr + `,"source_data":{"access":"memory","size":1}}`, "unknown field"},
		{`{"procedure":"connect_disconnect","transport":"tcp","target":"x:1","source_data":{"access":"memory"}}`, "source_data is for request_response"},
		{`{` + bulk + `,"destination_data":{"access":"file","path":"` + dir + `/no/such/dir/f"}}`, "no such file"},
		{`{` + bulk + `,"destination_data":{"access":"file","path":"received"}}`, "relative"},
		{`{` + bulk + `,"destination_data":{"access":"vm"}}`, `access "vm"`},
		{`{` + rr + `,"options":{"dscp":"64"}}`, "dscp"},
	} {
		_, err := ParseJob([]byte(tc.job))
		var bj *BadJob
		if err == nil || !errors.As(err, &bj) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a BadJob with %q", tc.job, err, tc.want)
		}
	}
}

// The bulk source is the responder's: a file it cannot read is its
// refusal, reported before the first timed transfer as a bad job.
func TestResponderSourceRefused(t *testing.T) {
	addr := responder(t, "tcp", "127.0.0.1")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{empty, "is empty"},
	} {
		res, err := runJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": addr, "iterations": 2,
			"source_data": map[string]any{"access": "file", "path": tc.path}}))
		var bj *BadJob
		if !errors.As(err, &bj) || !strings.Contains(err.Error(), "responder refused") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want the responder's refusal saying %q", tc.path, err, tc.want)
		}
		if res == nil || res.Completed != 0 || res.Stopped != "error" {
			t.Errorf("%s: result %+v", tc.path, res)
		}
	}
	// The connection's next job still runs.
	if _, err := runJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": addr, "iterations": 1, "count": 3})); err != nil {
		t.Fatal(err)
	}
}

// A responder older than the settings answers the setup transfer as an
// ordinary one (16 bytes): the initiator says so rather than measure
// memory while the job says file.
func TestOldResponderDetected(t *testing.T) {
	tr, _ := transport.Get("tcp")
	ln, err := tr.Listen("127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.ReadMsg(nil) // start, settings ignored
		c.ReadMsg(nil) // stop
		c.WriteMsg(appendMsg(nil, header{op: opBulkDone}, 16))
		c.ReadMsg(nil)
	}()
	_, err = runJob(t, jobJSON(map[string]any{"procedure": "bulk_get", "transport": "tcp", "target": ln.Addr().String(), "options": map[string]string{"dscp": "ef"}}))
	var bj *BadJob
	if !errors.As(err, &bj) || !strings.Contains(err.Error(), "predates") {
		t.Fatalf("err = %v", err)
	}
}

// markListener records the marks Serve puts on the connections it accepts,
// with what the connection's Tuning then says.
type markListener struct {
	transport.Listener
	mu    sync.Mutex
	marks []string
}

func (l *markListener) Accept() (transport.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &markConn{Conn: c, l: l}, nil
}

func (l *markListener) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.marks...)
}

type markConn struct {
	transport.Conn
	l *markListener
}

func (c *markConn) SetDSCP(d int) error {
	err := c.Conn.SetDSCP(d)
	c.l.mu.Lock()
	c.l.marks = append(c.l.marks, c.Conn.Tuning()["dscp"])
	c.l.mu.Unlock()
	return err
}

// The job's dscp knob marks the initiator's socket and, through the
// requests or the bulk settings, the responder's side of each connection.
func TestResponderMarksAsAsked(t *testing.T) {
	for _, tc := range []struct{ transport, procedure string }{
		{"tcp", ProcRequestResponse}, {"udp", ProcRequestResponse}, {"quic", ProcRequestResponse}, {"tls", ProcRequestResponse},
		{"tcp", ProcBulkGet}, {"quic", ProcBulkGet}, {"tcp", ProcConnectDisconnect},
	} {
		t.Run(tc.transport+"/"+tc.procedure, func(t *testing.T) {
			tr, _ := transport.Get(tc.transport)
			ln, err := tr.Listen("127.0.0.1:0", transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ml := &markListener{Listener: ln}
			addr := serveOn(t, ml, MaxPayload(tr))
			job := map[string]any{"procedure": tc.procedure, "transport": tc.transport, "target": addr, "iterations": 3, "options": map[string]string{"dscp": "ef"}}
			if tc.procedure == ProcConnectDisconnect {
				job["size"] = map[string]any{"dist": "constant", "value": 10}
			}
			res, err := runJob(t, jobJSON(job))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Paths[0].Tuning["dscp"]; got != "46" {
				t.Errorf("initiator tuning dscp %q", got)
			}
			time.Sleep(10 * time.Millisecond) // connect_disconnect: the last connection's mark
			marks := ml.seen()
			want := 1
			if tc.procedure == ProcConnectDisconnect {
				want = 3
			}
			if len(marks) != want {
				t.Fatalf("responder marked %d connections (%v), want %d", len(marks), marks, want)
			}
			for _, m := range marks {
				if m != "46" {
					t.Errorf("responder connection tuning dscp %q after the mark, want 46", m)
				}
			}
		})
	}
}

// Without the knob nothing is asked: the requests' b stays 0 and no bulk
// setup transfer is made (what a responder that predates both sees).
func TestNoDSCPNoSettings(t *testing.T) {
	tr, _ := transport.Get("tcp")
	ln, err := tr.Listen("127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ml := &markListener{Listener: ln}
	addr := serveOn(t, ml, MaxPayload(tr))
	for _, proc := range []string{ProcRequestResponse, ProcBulkGet} {
		if _, err := runJob(t, jobJSON(map[string]any{"procedure": proc, "transport": "tcp", "target": addr, "iterations": 2})); err != nil {
			t.Fatal(err)
		}
	}
	if m := ml.seen(); len(m) != 0 {
		t.Errorf("marks %v without a dscp knob", m)
	}
	if (BulkConfig{}).settings("", nil) != nil || dscpWord(nil) != 0 {
		t.Error("settings without being asked")
	}
}
