package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Issue 12: under --http, /healthz, /readyz and /metrics are served on the
// front end's own port, outside its Host and token checks (probes come by
// pod address, without a token), and the metrics count the HTTP sessions'
// decisions.
func TestHTTPServesOpsEndpoints(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	base := strings.TrimSuffix(url, "/mcp")
	sess := connectHTTP(t, url, nil, nil, false)
	if res := call(t, sess, "honest__echo", map[string]any{"text": "x"}); res.IsError {
		t.Fatalf("echo refused: %s", resultText(res))
	}
	get := func(path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A kubelet probe names the pod's address, not a name of the gate.
	if code, body := get("/healthz", "10.1.2.3:8080"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get("/readyz", "10.1.2.3:8080"); code != http.StatusOK {
		t.Errorf("/readyz with a policy loaded: %d %s", code, body)
	}
	code, body := get("/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{`mcp_gate_sessions 1`, `mcp_gate_decisions_total{kind="tool"`, `server="honest",verdict="allow"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The MCP endpoint itself keeps its Host check.
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = "10.1.2.3:8080"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /mcp with a foreign Host: %d, want 403", resp.StatusCode)
	}
}
