package metrics

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	m.Refused("malformed")
	m.Refused("malformed")
	m.Refused("no_session")

	body := scrape(t, m)
	fams := parse(t, body)
	for name, c := range map[string]struct {
		family string
		labels map[string]string
		want   float64
	}{
		"allow":       {"mcp_gate_decisions_total", map[string]string{"kind": "tool", "server": "github", "verdict": "allow", "rule": "allow[0]"}, 2},
		"deny":        {"mcp_gate_decisions_total", map[string]string{"kind": "tool", "server": "github", "verdict": "deny", "rule": "deny[1]"}, 1},
		"approved":    {"mcp_gate_approvals_total", map[string]string{"outcome": "approved"}, 1},
		"remembered":  {"mcp_gate_approvals_total", map[string]string{"outcome": "remembered"}, 1},
		"sessions":    {"mcp_gate_sessions", nil, 1},
		"started":     {"mcp_gate_sessions_started_total", nil, 2},
		"starts":      {"mcp_gate_upstream_starts_total", map[string]string{"server": "github"}, 2},
		"crashes":     {"mcp_gate_upstream_crashes_total", map[string]string{"server": "github"}, 1},
		"restarts":    {"mcp_gate_upstream_restarts_total", map[string]string{"server": "github"}, 1},
		"guard":       {"mcp_gate_guard_refusals_total", map[string]string{"server": "github", "kind": "forged_approval"}, 1},
		"reloads ok":  {"mcp_gate_policy_reloads_total", map[string]string{"result": "ok"}, 1},
		"reloads bad": {"mcp_gate_policy_reloads_total", map[string]string{"result": "failed"}, 1},
		"reload ok":   {"mcp_gate_policy_last_reload_success", nil, 0},
		"audit":       {"mcp_gate_audit_write_failures_total", nil, 1},
		"malformed":   {"mcp_gate_refusals_total", map[string]string{"kind": "malformed"}, 2},
		"no session":  {"mcp_gate_refusals_total", map[string]string{"kind": "no_session"}, 1},
		"unknown":     {"mcp_gate_refusals_total", map[string]string{"kind": "unknown_name"}, 0},
		"build":       {"mcp_gate_build_info", map[string]string{"version": "v-test"}, 1},
	} {
		if got, ok := value(fams, c.family, c.labels); !ok || got != c.want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, c.want)
		}
	}

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

// Every family keeps the type, HELP text and histogram buckets it had
// under the Prometheus client, and the reload results exist before any
// reload: a dashboard or alert written against the old exposition reads
// the new one the same way.
func TestExpositionShape(t *testing.T) {
	m := New(Options{Version: "v", PolicyRevision: func() string { return "sha256:cccccccccccc" }})
	m.Approval("approved", time.Second)
	m.CallDone("s", "tools/call", time.Millisecond, false)
	m.Decision("tool", "s", "allow", "r")
	m.GuardRefused("s", "k")
	m.UpstreamStarted("s", true)
	m.UpstreamExited("s", true)
	body := scrape(t, m)
	fams := parse(t, body)
	for name, typ := range map[string]dto.MetricType{
		decisionsName: dto.MetricType_COUNTER, approvalsName: dto.MetricType_COUNTER,
		approvalWaitName: dto.MetricType_HISTOGRAM, callLatencyName: dto.MetricType_HISTOGRAM,
		upStartsName: dto.MetricType_COUNTER, upCrashesName: dto.MetricType_COUNTER, upRestartsName: dto.MetricType_COUNTER,
		sessionsName: dto.MetricType_GAUGE, sessionsTotalName: dto.MetricType_COUNTER,
		guardName: dto.MetricType_COUNTER, auditFailuresName: dto.MetricType_COUNTER, refusalsName: dto.MetricType_COUNTER,
		reloadsName: dto.MetricType_COUNTER, reloadOKName: dto.MetricType_GAUGE,
		policyInfoName: dto.MetricType_GAUGE, buildInfoName: dto.MetricType_GAUGE,
	} {
		f := fams[name]
		switch {
		case f == nil:
			t.Errorf("%s missing from the exposition", name)
		case f.GetType() != typ:
			t.Errorf("%s has type %v, want %v", name, f.GetType(), typ)
		case f.GetHelp() != help[name] || help[name] == "":
			t.Errorf("%s has HELP %q, want %q", name, f.GetHelp(), help[name])
		}
	}
	if len(help) != 16 {
		t.Errorf("%d HELP texts for 16 families", len(help))
	}
	for name, want := range map[string][]float64{approvalWaitName: slices.Concat(approvalBuckets, []float64{math.Inf(1)}), callLatencyName: slices.Concat(callBuckets, []float64{math.Inf(1)})} {
		if f := fams[name]; f != nil && len(f.Metric) > 0 {
			var got []float64
			for _, b := range f.Metric[0].GetHistogram().GetBucket() {
				got = append(got, b.GetUpperBound())
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s buckets %v, want %v", name, got, want)
			}
		}
	}
	for _, r := range []string{"ok", "failed"} {
		if v, ok := value(fams, reloadsName, map[string]string{"result": r}); !ok || v != 0 {
			t.Errorf("reload result %q before any reload: %v, present %v; want 0", r, v, ok)
		}
	}
	// The Go runtime's and the process's metrics, from the library.
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_gc_duration_seconds", "go_info",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if fams[name] == nil {
			t.Errorf("%s missing from the exposition", name)
		}
	}
	if strings.Contains(body, "# HELP go_goroutines\n") || strings.Contains(body, "# HELP process_open_fds\n") {
		t.Error("a HELP line without text is left in")
	}
}

// The refusal counter's kind label takes the refusal kinds of the audit
// log and nothing else: every kind has its series from the start (a rate
// is defined before the first refusal), and a kind outside the set, from
// any caller, counts as "other" rather than making a series of its own.
func TestRefusalKindsBounded(t *testing.T) {
	m := New(Options{})
	for _, v := range hostile {
		m.Refused(v)
	}
	m.Refused("unknown_name")
	fams := parse(t, scrape(t, m))
	f := fams[refusalsName]
	if f == nil {
		t.Fatalf("%s missing from the exposition", refusalsName)
	}
	if n, want := len(f.Metric), len(audit.RefusalKinds())+1; n != want {
		t.Errorf("%s has %d series; want %d, one per refusal kind and other", refusalsName, n, want)
	}
	for _, k := range audit.RefusalKinds() {
		want := 0.0
		if k == "unknown_name" {
			want = 1
		}
		if v, ok := value(fams, refusalsName, map[string]string{"kind": k}); !ok || v != want {
			t.Errorf("kind %s: %v (present %v), want %v", k, v, ok, want)
		}
	}
	if v, _ := value(fams, refusalsName, map[string]string{"kind": "other"}); v != float64(len(hostile)) {
		t.Errorf("kind other: %v, want %d", v, len(hostile))
	}
	for _, k := range append(audit.RefusalKinds(), "other") {
		if !strings.Contains(help[refusalsName], k) {
			t.Errorf("the HELP text of %s does not name the kind %s", refusalsName, k)
		}
	}
}

// Two gates in one process each have their own set: New registers
// nothing globally, so a second New neither panics nor shares counts.
func TestPrivateSets(t *testing.T) {
	a, b := New(Options{Version: "x"}), New(Options{Version: "x"})
	a.SessionStarted()
	a.Decision("tool", "s", "allow", "r")
	b.Decision("tool", "s", "allow", "r")
	fa, fb := parse(t, scrape(t, a)), parse(t, scrape(t, b))
	if v, _ := value(fb, sessionsName, nil); v != 0 {
		t.Error("two Metrics share a gauge")
	}
	if v, _ := value(fa, sessionsName, nil); v != 1 {
		t.Error("a session was not counted")
	}
	labels := map[string]string{"kind": "tool", "server": "s", "verdict": "allow", "rule": "r"}
	if va, _ := value(fa, decisionsName, labels); va != 1 {
		t.Errorf("decisions counted %v in a, want 1", va)
	}
	if vb, _ := value(fb, decisionsName, labels); vb != 1 {
		t.Errorf("decisions counted %v in b, want 1", vb)
	}
}

// No revision before a policy is loaded: no series rather than an empty
// label.
func TestNoRevisionBeforeLoad(t *testing.T) {
	m := New(Options{PolicyRevision: func() string { return "" }})
	if body := scrape(t, m); strings.Contains(body, "mcp_gate_policy_info{") {
		t.Errorf("a revision series before any policy:\n%s", grep(body, "policy_info"))
	}
	if body := scrape(t, New(Options{})); strings.Contains(body, "mcp_gate_policy_info") {
		t.Errorf("a revision family without a revision source:\n%s", grep(body, "policy_info"))
	}
}

// hostile are label values an operator's configuration may hold (server
// keys, rule names): each must come out of a scrape as it went in, in an
// exposition a strict parser reads, without forging a series.
var hostile = []string{
	`quo"te`, `back\slash`, `trailing\`, "new\nline", "cr\rlf\r\n", `brace{}`, `}`, `{`, `a="b",c="d"`,
	`"} 1` + "\nmcp_gate_forged_total 1\n#", `\"`, `\\"`, `\n`, "tab\there", "ünïcødé ☃ 𝄞", "\u2028\u2029",
	"nul\x00byte", "", " ", "#", "# HELP x", "\xff\xfeinvalid utf-8", "\xe2\x82", strings.Repeat(`"\`, 500),
}

// Label values are the operator's configuration and may hold any
// character: they are escaped for the text format, so a scrape still
// parses, every value round-trips, nothing is forged and nothing panics.
// A value that is not UTF-8 comes out with U+FFFD in place of each bad
// byte, the format being UTF-8 (the Prometheus client panicked on one).
func TestHostileLabelValues(t *testing.T) {
	m := New(Options{Version: "v\"1\\\n", PolicyRevision: func() string { return "rev\"}\n" }})
	for _, v := range hostile {
		m.Decision("tool", v, "allow", v+"-rule")
		m.Approval(v, time.Second)
		m.CallDone(v, v, time.Millisecond, false)
		m.GuardRefused(v, v)
		m.UpstreamStarted(v, true)
		m.UpstreamExited(v, true)
	}
	body := scrape(t, m)
	fams := parse(t, body)
	for name := range fams {
		if _, ok := help[name]; !ok && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("a family the gate does not have: %q", name)
		}
	}
	for _, v := range hostile {
		want := utf8Value(v)
		for family, labels := range map[string]map[string]string{
			decisionsName:  {"kind": "tool", "server": want, "verdict": "allow", "rule": utf8Value(v + "-rule")},
			approvalsName:  {"outcome": want},
			upStartsName:   {"server": want},
			upCrashesName:  {"server": want},
			upRestartsName: {"server": want},
			guardName:      {"server": want, "kind": want},
		} {
			if got, ok := value(fams, family, labels); !ok || got != 1 {
				t.Errorf("%s for %q: %v (present %v), want 1", family, v, got, ok)
			}
		}
		if !hasSeries(fams, callLatencyName, map[string]string{"server": want, "method": want, "result": "ok"}) {
			t.Errorf("%s for %q missing", callLatencyName, v)
		}
		if !hasSeries(fams, approvalWaitName, map[string]string{"outcome": want}) {
			t.Errorf("%s for %q missing", approvalWaitName, v)
		}
	}
	if !hasSeries(fams, buildInfoName, map[string]string{"version": "v\"1\\\n"}) ||
		!hasSeries(fams, policyInfoName, map[string]string{"revision": "rev\"}\n"}) {
		t.Errorf("version or revision not read back:\n%s", grep(body, "_info{"))
	}
}

// Any string, escaped, is a series name the library accepts (it panics on
// one it does not) and a label value a strict parser reads back as it was
// (made UTF-8).
func FuzzSeriesName(f *testing.F) {
	for _, v := range hostile {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		name := seriesName("mcp_gate_x_total", []string{"a", "b"}, []string{v, "z"})
		if err := validateSeriesName(name); err != nil {
			t.Fatalf("the library refuses %q: %v", name, err)
		}
		fams := parse(t, "# TYPE mcp_gate_x_total counter\n"+name+" 1\n")
		if !hasSeries(fams, "mcp_gate_x_total", map[string]string{"a": utf8Value(v), "b": "z"}) {
			t.Fatalf("%q did not round-trip through %q", v, name)
		}
	})
}

// At most four scrapes are rendered at once: a fifth is refused with a
// 503 rather than queued, and once the four end a scrape is served again.
func TestScrapeLimit(t *testing.T) {
	block := make(chan struct{})
	entered := make(chan struct{}, maxScrapes+1)
	var blocking sync.Mutex
	blockOn := true
	m := New(Options{PolicyRevision: func() string {
		blocking.Lock()
		b := blockOn
		blocking.Unlock()
		if b {
			entered <- struct{}{}
			<-block
		}
		return "sha256:dddddddddddd"
	}})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	codes := make(chan int, maxScrapes)
	for range maxScrapes {
		go func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range maxScrapes {
		<-entered
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "Limit of concurrent scrapes reached (4)") {
		t.Errorf("a fifth scrape: %d %q; want 503 and the limit", resp.StatusCode, b)
	}
	blocking.Lock()
	blockOn = false
	blocking.Unlock()
	close(block)
	for range maxScrapes {
		if c := <-codes; c != http.StatusOK {
			t.Errorf("a blocked scrape ended %d, want 200", c)
		}
	}
	scrape(t, m)
}

// A scrape that takes longer than the limit is answered 503 with the
// reason, never a partial body; its slot is held until it really ends.
func TestScrapeTimeout(t *testing.T) {
	block := make(chan struct{})
	var once sync.Once
	m := New(Options{PolicyRevision: func() string { once.Do(func() { <-block }); return "sha256:eeeeeeeeeeee" }})
	srv := httptest.NewServer(m.handler(1, 50*time.Millisecond))
	defer srv.Close()
	// Without the limit the first scrape would hang: fail instead, and
	// let the render end before the server closes.
	client := &http.Client{Timeout: 5 * time.Second}
	release := sync.OnceFunc(func() { close(block) })
	defer release()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "Exceeded the scrape timeout") || strings.Contains(string(b), "mcp_gate") {
		t.Errorf("a slow scrape: %d %q; want 503 with the timeout and no metrics", resp.StatusCode, b)
	}
	// The slow render still holds the only slot.
	if resp, err := client.Get(srv.URL); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a scrape while the slow one renders: %v %v; want 503", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	release()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed: %d", resp.StatusCode)
		}
	}
}

// A scrape that cannot be rendered whole (here a writer panics) is a 500
// with the reason and no metrics, and the gate goes on serving.
func TestScrapeWholeOrError(t *testing.T) {
	var fail sync.Mutex
	failing := true
	m := New(Options{PolicyRevision: func() string {
		fail.Lock()
		defer fail.Unlock()
		if failing {
			panic("revision unreadable")
		}
		return "sha256:ffffffffffff"
	}})
	m.SessionStarted()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "revision unreadable") || strings.Contains(string(b), "mcp_gate_sessions") {
		t.Errorf("a failing scrape: %d %q; want 500 with the reason and no metrics", resp.StatusCode, b)
	}
	fail.Lock()
	failing = false
	fail.Unlock()
	if body := scrape(t, m); !strings.Contains(body, "mcp_gate_sessions 1") {
		t.Error("the scrape after a failed one lacks mcp_gate_sessions 1")
	}
}

// The text format's content type; gzip when the scraper offers it (as
// Prometheus does), plain otherwise.
func TestScrapeEncoding(t *testing.T) {
	m := New(Options{})
	m.SessionStarted()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	for _, c := range []struct {
		accept string
		gz     bool
	}{{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"identity", false}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if c.accept != "" {
			req.Header.Set("Accept-Encoding", c.accept)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
			t.Errorf("content type %q", ct)
		}
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != c.gz {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.accept, got, c.gz)
		}
		if c.gz {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("Accept-Encoding %q: %v", c.accept, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if fams := parse(t, string(b)); !hasSeries(fams, sessionsName, nil) {
			t.Errorf("Accept-Encoding %q: no %s", c.accept, sessionsName)
		}
	}
}

// utf8Value is v as it is read back: each byte that is not UTF-8 becomes
// U+FFFD (a []rune conversion does the same).
func utf8Value(v string) string { return string([]rune(v)) }

func scrape(t testing.TB, m *Metrics) string {
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

// parse reads an exposition with the Prometheus text parser, strict about
// names (legacy charset) and UTF-8, and fails on a series that appears
// twice, which the parser itself lets through.
func parse(t testing.TB, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	for name, f := range fams {
		seen := map[string]bool{}
		for _, mt := range f.Metric {
			var sig []string
			for _, l := range mt.Label {
				sig = append(sig, l.GetName()+"\x00"+l.GetValue())
			}
			sort.Strings(sig)
			k := strings.Join(sig, "\x01")
			if seen[k] {
				t.Errorf("%s has a series twice: %q", name, sig)
			}
			seen[k] = true
		}
	}
	return fams
}

// find returns the series of family with exactly these labels.
func find(fams map[string]*dto.MetricFamily, family string, labels map[string]string) *dto.Metric {
	f := fams[family]
	if f == nil {
		return nil
	}
	for _, mt := range f.Metric {
		if len(mt.Label) != len(labels) {
			continue
		}
		match := true
		for _, l := range mt.Label {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				match = false
				break
			}
		}
		if match {
			return mt
		}
	}
	return nil
}

func hasSeries(fams map[string]*dto.MetricFamily, family string, labels map[string]string) bool {
	return find(fams, family, labels) != nil
}

// value is a counter's or gauge's value.
func value(fams map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	mt := find(fams, family, labels)
	switch {
	case mt == nil:
		return 0, false
	case mt.Counter != nil:
		return mt.Counter.GetValue(), true
	case mt.Gauge != nil:
		return mt.Gauge.GetValue(), true
	case mt.Untyped != nil:
		return mt.Untyped.GetValue(), true
	}
	return 0, false
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

// Accept-Encoding: gzip with a zero weight, however it is spelled, is a
// refusal; any other weight, or none, offers it.
func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"gzip":                 true,
		"GZIP":                 true,
		"deflate, gzip":        true,
		"gzip;q=0.5":           true,
		"gzip;q=1":             true,
		"gzip;q=1.0":           true,
		"gzip; q=0.001":        true,
		"gzip;q=0":             false,
		"gzip;Q=0":             false,
		"gzip; q=0.000":        false,
		"gzip;q=0.":            false,
		"deflate, gzip ;Q=0.0": false,
		"":                     false,
		"identity":             false,
		"x-gzip":               false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}
