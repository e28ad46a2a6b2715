package linkem

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"protolab/agents/metrics"
)

func newTestServer(t *testing.T, c Config) (*httptest.Server, *Emulator, *fakeClock) {
	t.Helper()
	e, _, clock, _ := newTestEmulator(t, c)
	set, err := metrics.New(metrics.Config{}, "build_info")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Add("linkem", NewCollector(e, nil)); err != nil {
		t.Fatal(err)
	}
	reg, err := metrics.NewRegistry(set)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(e, reg, nil))
	t.Cleanup(srv.Close)
	return srv, e, clock
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPConfig(t *testing.T) {
	srv, e, _ := newTestServer(t, Config{Delay: Duration(5 * time.Millisecond)})
	code, body := do(t, "GET", srv.URL+"/config", "")
	if code != 200 {
		t.Fatalf("GET /config: %d %s", code, body)
	}
	var got Applied
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("GET /config body %s: %v", body, err)
	}
	if got.Name != "test" || got.Generation != 0 || time.Duration(got.Config.Delay) != 5*time.Millisecond || got.Config.Limit != DefaultLimit {
		t.Errorf("GET /config = %+v", got)
	}
	for _, key := range ConfigFields {
		if !strings.Contains(body, `"`+key+`":`) {
			t.Errorf("GET /config lacks field %q: %s", key, body)
		}
	}

	before := time.Now()
	code, body = do(t, "PUT", srv.URL+"/config", `{"delay":"50ms","loss":"20%","loss-ge":""}`)
	after := time.Now()
	if code != 200 {
		t.Fatalf("PUT /config: %d %s", code, body)
	}
	var applied Applied
	if err := json.Unmarshal([]byte(body), &applied); err != nil {
		t.Fatal(err)
	}
	if applied.Generation != 1 || time.Duration(applied.Config.Delay) != 50*time.Millisecond || applied.Config.Loss != 20 {
		t.Errorf("PUT answer %+v", applied)
	}
	if applied.EffectiveAt.Before(before) || applied.EffectiveAt.After(after) || applied.EffectiveAt.UnixNano() != applied.EffectiveAtUnixNano {
		t.Errorf("effective_at %v (%d) not within the request [%v, %v]", applied.EffectiveAt, applied.EffectiveAtUnixNano, before, after)
	}
	if c := e.Config(); c.Generation != 1 || c.Config.Loss != 20 || c.Config.Jitter != 0 {
		t.Errorf("config in force %+v", c)
	}
	// The GET answer's config member is a valid PUT body.
	_, body = do(t, "GET", srv.URL+"/config", "")
	var again struct{ Config json.RawMessage }
	_ = json.Unmarshal([]byte(body), &again)
	if code, b := do(t, "PUT", srv.URL+"/config", string(again.Config)); code != 200 {
		t.Errorf("PUT of GET's config: %d %s", code, b)
	}
}

func TestHTTPConfigErrors(t *testing.T) {
	srv, e, _ := newTestServer(t, Config{})
	tests := []struct {
		method, body string
		code         int
		want         string
	}{
		{"PUT", `{"loss":"150%"}`, 400, "loss: percentage 150 is out of range"},
		{"PUT", `{"delay":"10"}`, 400, "has no unit"},
		{"PUT", `{"bogus":1}`, 400, "bogus: unknown field"},
		{"PUT", `{"reorder":5}`, 400, "needs a delay"},
		{"PUT", `not json`, 400, "invalid config JSON"},
		{"PUT", `{"delay":"` + strings.Repeat("1", MaxConfigBody) + `ms"}`, 413, "reading body"},
		{"POST", `{}`, 405, "not allowed"},
		{"DELETE", ``, 405, "not allowed"},
	}
	for _, tt := range tests {
		code, body := do(t, tt.method, srv.URL+"/config", tt.body)
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s %.40s: %d %s; want %d containing %q", tt.method, tt.body, code, body, tt.code, tt.want)
		}
		var m map[string]string
		if json.Unmarshal([]byte(body), &m) != nil || m["error"] == "" {
			t.Errorf("%s %.40s: error body is not {\"error\": ...}: %s", tt.method, tt.body, body)
		}
	}
	if e.Config().Generation != 0 || e.Counts().ConfigChanges != 0 {
		t.Error("a rejected PUT changed the configuration")
	}
}

func TestHTTPMetrics(t *testing.T) {
	srv, e, clock := newTestServer(t, Config{Delay: Duration(time.Millisecond), Loss: 50})
	for i := 0; i < 100; i++ {
		e.Arrive(udpPacket(uint32(i), 10))
	}
	clock.advance(time.Millisecond)
	e.ReleaseDue()
	do(t, "PUT", srv.URL+"/config", `{}`)
	code, body := do(t, "GET", srv.URL+"/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	n := e.Counts()
	for _, want := range []string{
		`protolab_linkem_packets_total{action="passed",link="test"} ` + itoa(n.Passed),
		`protolab_linkem_packets_total{action="dropped",link="test"} ` + itoa(n.Dropped),
		`protolab_linkem_packets_total{action="corrupted",link="test"} 0`,
		`protolab_linkem_packets_total{action="duplicated",link="test"} 0`,
		`protolab_linkem_packets_total{action="reordered",link="test"} 0`,
		`protolab_linkem_packets_total{action="overflow",link="test"} 0`,
		`protolab_linkem_received_packets_total{link="test"} 100`,
		`protolab_linkem_held_packets{link="test"} 0`,
		`protolab_linkem_config_changes_total{link="test"} 1`,
		`protolab_linkem_config_generation{link="test"} 1`,
		`protolab_linkem_added_delay_seconds_bucket{link="test",le="0.001"} ` + itoa(n.Passed),
		`protolab_linkem_added_delay_seconds_bucket{link="test",le="1e-05"} 0`,
		`protolab_linkem_added_delay_seconds_count{link="test"} ` + itoa(n.Passed),
		`# TYPE protolab_linkem_added_delay_seconds histogram`,
		`# TYPE protolab_linkem_packets_total counter`,
		`# TYPE protolab_linkem_held_packets gauge`,
		`protolab_agent_build_info{goversion="go`,
		`protolab_scrape_collector_success{collector="linkem"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if n.Passed+n.Dropped != 100 || n.Dropped < 30 || n.Dropped > 70 {
		t.Errorf("counts %+v", n)
	}
	if code, body := do(t, "GET", srv.URL+"/healthz", ""); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
