package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every hook reaches its metric with the labels it was given, and the
// exposition a scraper reads carries them.
func TestHooksReachTheExposition(t *testing.T) {
	rev := "sha256:aaaaaaaaaaaa"
	var mu sync.Mutex
	m := New(Options{Version: "v-test", PolicyRevision: func() string { mu.Lock(); defer mu.Unlock(); return rev }})
	m.Decision("tool", "github", "allow", "allow[0]")
	m.Decision("tool", "github", "allow", "allow[0]")
	m.Decision("tool", "github", "deny", "deny[1]")
	m.Approval("approved", 3*time.Second)
	m.Approval("remembered", 0)
	m.CallDone("github", "tools/call", 2*time.Millisecond, false)
	m.CallDone("github", "tools/call", time.Second, true)
	m.GuardRefused("github", "forged_approval")
	m.SessionStarted()
	m.SessionStarted()
	m.SessionEnded()
	m.UpstreamStarted("github", false)
	m.UpstreamExited("github", true)
	m.UpstreamStarted("github", true)
	m.UpstreamExited("github", false)
	m.PolicyReloaded(true)
	m.PolicyReloaded(false)
	m.AuditFailed()

	for name, c := range map[string]struct {
		got, want float64
	}{
		"allow":       {testutil.ToFloat64(m.decisions.WithLabelValues("tool", "github", "allow", "allow[0]")), 2},
		"deny":        {testutil.ToFloat64(m.decisions.WithLabelValues("tool", "github", "deny", "deny[1]")), 1},
		"approved":    {testutil.ToFloat64(m.approvals.WithLabelValues("approved")), 1},
		"remembered":  {testutil.ToFloat64(m.approvals.WithLabelValues("remembered")), 1},
		"sessions":    {testutil.ToFloat64(m.sessions), 1},
		"started":     {testutil.ToFloat64(m.sessionsTotal), 2},
		"starts":      {testutil.ToFloat64(m.upStarts.WithLabelValues("github")), 2},
		"crashes":     {testutil.ToFloat64(m.upCrashes.WithLabelValues("github")), 1},
		"restarts":    {testutil.ToFloat64(m.upRestarts.WithLabelValues("github")), 1},
		"guard":       {testutil.ToFloat64(m.guardRefusals.WithLabelValues("github", "forged_approval")), 1},
		"reloads ok":  {testutil.ToFloat64(m.reloads.WithLabelValues("ok")), 1},
		"reloads bad": {testutil.ToFloat64(m.reloads.WithLabelValues("failed")), 1},
		"reload ok":   {testutil.ToFloat64(m.reloadOK), 0},
		"audit":       {testutil.ToFloat64(m.auditFailures), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}

	body := scrape(t, m)
	for _, want := range []string{
		`mcp_gate_decisions_total{kind="tool",rule="allow[0]",server="github",verdict="allow"} 2`,
		`mcp_gate_approval_wait_seconds_count{outcome="approved"} 1`,
		`mcp_gate_call_duration_seconds_count{method="tools/call",result="error",server="github"} 1`,
		`mcp_gate_call_duration_seconds_bucket{method="tools/call",result="ok",server="github",le="0.0025"} 1`,
		`mcp_gate_policy_info{revision="sha256:aaaaaaaaaaaa"} 1`,
		`mcp_gate_build_info{version="v-test"} 1`,
		`mcp_gate_sessions 1`,
		`mcp_gate_audit_write_failures_total 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the exposition lacks %q", want)
		}
	}
	if strings.Contains(body, `outcome="remembered"} `) && strings.Contains(body, `approval_wait_seconds_count{outcome="remembered"}`) {
		t.Error("a question never put was observed as a wait")
	}

	// The revision is the one in force at the scrape, and only that one.
	mu.Lock()
	rev = "sha256:bbbbbbbbbbbb"
	mu.Unlock()
	body = scrape(t, m)
	if !strings.Contains(body, `mcp_gate_policy_info{revision="sha256:bbbbbbbbbbbb"} 1`) || strings.Contains(body, "aaaaaaaaaaaa") {
		t.Errorf("after a reload the exposition should carry the new revision alone:\n%s", grep(body, "policy_info"))
	}
}

// Two gates in one process each have their own registry: New registers
// nothing globally, so a second New neither panics nor shares counts.
func TestPrivateRegistries(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	a.SessionStarted()
	if testutil.ToFloat64(b.sessions) != 0 {
		t.Error("two Metrics share a counter")
	}
}

// No revision before a policy is loaded: no series rather than an empty
// label.
func TestNoRevisionBeforeLoad(t *testing.T) {
	m := New(Options{PolicyRevision: func() string { return "" }})
	if body := scrape(t, m); strings.Contains(body, "mcp_gate_policy_info{") {
		t.Errorf("a revision series before any policy:\n%s", grep(body, "policy_info"))
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
