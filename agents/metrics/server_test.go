package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newTestHandler(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(s)
	if err != nil {
		t.Fatal(err)
	}
	return NewHandler(reg, nil)
}

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func TestHTTPEndpoints(t *testing.T) {
	srv := httptest.NewServer(newTestHandler(t, goldenConfig()))
	defer srv.Close()

	code, ctype, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics status %d", code)
	}
	if !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("/metrics content type %q", ctype)
	}
	for _, want := range []string{
		"# HELP protolab_cpu_seconds_total ",
		"# TYPE protolab_cpu_seconds_total counter",
		"protolab_cpu_quota_cores 0.5",
		`protolab_interface_receive_bytes_total{interface="eth1"} 1.048576e+06`,
		`protolab_scrape_collector_success{collector="netdev"} 1`,
		`protolab_agent_build_info{goversion="go`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, unwanted := range []string{`interface="eth0"`, `interface="lo"`, "go_goroutines", "process_cpu_seconds_total", "promhttp_"} {
		if strings.Contains(body, unwanted) {
			t.Errorf("/metrics contains %q", unwanted)
		}
	}

	code, _, body = get(t, srv.URL+"/healthz")
	if code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, _, _ = get(t, srv.URL+"/nosuch"); code != http.StatusNotFound {
		t.Errorf("/nosuch status %d, want 404", code)
	}
}

// A node whose cgroup and proc files are all missing still serves a 200
// scrape, with the failures visible as success 0.
func TestHTTPWithBrokenCollectors(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(newTestHandler(t, Config{CgroupRoot: dir, ProcPath: dir}))
	defer srv.Close()
	code, _, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics status %d", code)
	}
	for _, want := range []string{
		`protolab_scrape_collector_success{collector="cgroup_cpu"} 0`,
		`protolab_scrape_collector_success{collector="netdev"} 0`,
		`protolab_scrape_collector_success{collector="build_info"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

func TestServeShutsDownOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, newTestHandler(t, goldenConfig()), nil) }()

	code, _, _ := get(t, "http://"+ln.Addr().String()+"/healthz")
	if code != http.StatusOK {
		t.Fatalf("/healthz status %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(ShutdownTimeout + time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("listener still accepting after shutdown")
	}
}

func TestListenAndServeBadAddress(t *testing.T) {
	err := ListenAndServe(context.Background(), "127.0.0.1:notaport", http.NotFoundHandler(), nil)
	if err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("err = %v, want a listen error", err)
	}
}
