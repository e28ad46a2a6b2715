package spims

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"protolab/agents/transport"
)

// responder serves every procedure over transport name on host:0 until the
// test ends; it returns the address.
func responder(t testing.TB, name, host string) string {
	t.Helper()
	tr, err := transport.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Available(); err != nil {
		t.Skipf("%s: %v", name, err)
	}
	ln, err := tr.Listen(net.JoinHostPort(host, "0"), transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, MaxPayload(tr))
}

// serveOn runs Serve on ln (messages of up to maxPayload) until the test
// ends; it returns the address.
func serveOn(t testing.TB, ln transport.Listener, maxPayload int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, maxPayload, nil, t.Logf) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not end")
		}
	})
	return ln.Addr().String()
}

// runJob resolves and runs a job given as JSON, with a 10 s bound.
func runJob(t testing.TB, js string) (*Result, error) {
	t.Helper()
	p, err := ParseJob([]byte(js))
	if err != nil {
		t.Fatalf("job %s: %v", js, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Run(ctx, p, nil)
}

// jobJSON marshals a job description.
func jobJSON(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}
