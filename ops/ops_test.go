package ops

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-gate/mcp-gate/metrics"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /healthz answers while the process runs; /readyz follows ready and says
// why not; /metrics serves the registry; other methods are refused.
func TestEndpoints(t *testing.T) {
	var why atomic.Pointer[error]
	mux := http.NewServeMux()
	m := metrics.New(metrics.Options{})
	m.SessionStarted()
	Mount(mux, m, func() error {
		if e := why.Load(); e != nil {
			return *e
		}
		return nil
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if code, body := get(t, srv.URL+HealthzPath); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, body := get(t, srv.URL+ReadyzPath); code != 200 || body != "ready\n" {
		t.Errorf("readyz ready: %d %q", code, body)
	}
	e := errors.New("no policy loaded yet")
	why.Store(&e)
	if code, body := get(t, srv.URL+ReadyzPath); code != http.StatusServiceUnavailable || !strings.Contains(body, "no policy loaded yet") {
		t.Errorf("readyz not ready: %d %q; want 503 with the reason", code, body)
	}
	if code, _ := get(t, srv.URL+HealthzPath); code != 200 {
		t.Errorf("healthz follows readiness: %d", code)
	}
	if code, body := get(t, srv.URL+MetricsPath); code != 200 || !strings.Contains(body, "mcp_gate_sessions 1") {
		t.Errorf("metrics: %d, lacks mcp_gate_sessions 1", code)
	}
	resp, err := http.Post(srv.URL+ReadyzPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz: %d; want 405", resp.StatusCode)
	}
}

// Metrics off: no /metrics, the probes still served; a nil ready is ready.
func TestWithoutMetrics(t *testing.T) {
	mux := http.NewServeMux()
	Mount(mux, nil, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if code, _ := get(t, srv.URL+MetricsPath); code != http.StatusNotFound {
		t.Errorf("/metrics with metrics off: %d; want 404", code)
	}
	if code, _ := get(t, srv.URL+ReadyzPath); code != 200 {
		t.Errorf("/readyz: %d", code)
	}
}
