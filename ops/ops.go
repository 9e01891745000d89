// Package ops serves the gate's operations endpoints: /healthz (the
// process answers), /readyz (a valid policy is in force and the gate is
// not shutting down) and /metrics (package metrics). Mount puts them on
// any mux: the HTTP front end's, or the loopback-only listener of serve
// --ops-addr. They carry no MCP traffic and no identity: an orchestrator's
// probes and a Prometheus scraper call them without credentials, so they
// say nothing a scraper should not read (no tool names, no arguments, no
// users).
package ops

import (
	"fmt"
	"net/http"

	"github.com/mcp-gate/mcp-gate/metrics"
)

// Paths of the endpoints, which the Kubernetes manifests' probes and the
// scrape annotations name.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
	MetricsPath = "/metrics"
)

// Mount registers the endpoints on mux. ready returns nil when the gate
// can serve, else why not, which /readyz answers with a 503; nil means
// always ready. m nil leaves /metrics out (metrics not enabled).
func Mount(mux *http.ServeMux, m *metrics.Metrics, ready func() error) {
	mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET "+ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil {
			if err := ready(); err != nil {
				plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		plain(w, http.StatusOK, "ready")
	})
	if m != nil {
		mux.Handle("GET "+MetricsPath, m.Handler())
	}
}

// plain writes a short text answer that no browser will sniff or cache.
func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
