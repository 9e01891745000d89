// Package metrics counts what the gate does, in Prometheus form: decisions
// by verdict, server and rule; approvals by outcome and how long the human
// took; the latency of forwarded calls per server; upstream starts,
// crashes and restarts; open host sessions; guard refusals; requests
// refused before any decision, by kind; policy reloads and the revision in
// force.
//
// A Metrics is created only when the operator asks for it (serve
// --ops-addr, or the HTTP front end): the gate reaches it through
// proxy.Observer and policy.ReloadObserver, whose nil values cost a nil
// comparison. Its series live in a private set of
// github.com/VictoriaMetrics/metrics, never the library's default one, so
// that two gates in one process (tests) do not collide and nothing is
// registered at all until New is called. That library was chosen over the
// Prometheus client for the gate's start-up and idle-memory targets: its
// package initialisation registers only an empty default set and reads a
// few cgroup files (about 0.3 ms, 28 KB, no goroutine), where the
// client's built a registry with Go and process collectors, and it links
// no protobuf model.
//
// Every label value comes from the operator's configuration or the gate's
// own vocabulary (server keys, rule names, verdicts, outcomes), never from
// a message, so the number of series is bounded by the configuration: tool
// names, URIs and users are not labels. A configured name may still hold
// any character; it is escaped for the text format (label.go) before it
// becomes part of a series name, so no name can break the exposition or
// make the library panic.
package metrics

import (
	"io"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"github.com/mcp-gate/mcp-gate/audit"
)

// Namespace prefixes every metric name.
const Namespace = "mcp_gate"

// Names of the gate's metric families.
const (
	decisionsName     = Namespace + "_decisions_total"
	approvalsName     = Namespace + "_approvals_total"
	approvalWaitName  = Namespace + "_approval_wait_seconds"
	callLatencyName   = Namespace + "_call_duration_seconds"
	upStartsName      = Namespace + "_upstream_starts_total"
	upCrashesName     = Namespace + "_upstream_crashes_total"
	upRestartsName    = Namespace + "_upstream_restarts_total"
	sessionsName      = Namespace + "_sessions"
	sessionsTotalName = Namespace + "_sessions_started_total"
	guardName         = Namespace + "_guard_refusals_total"
	refusalsName      = Namespace + "_refusals_total"
	auditFailuresName = Namespace + "_audit_write_failures_total"
	reloadsName       = Namespace + "_policy_reloads_total"
	reloadOKName      = Namespace + "_policy_last_reload_success"
	policyInfoName    = Namespace + "_policy_info"
	buildInfoName     = Namespace + "_build_info"
)

// help is each family's HELP text. The library writes a bare "# HELP
// name" line; the handler puts these texts in (exposition.go).
var help = map[string]string{
	decisionsName:     "Policy decisions, by the kind of request (tool, prompt, resource, sampling), upstream server, verdict (allow, ask, deny) and deciding rule.",
	approvalsName:     "Approval questions by outcome (approved, approved_session, remembered, declined, cancelled, timeout, unsupported, withdrawn, error, malformed).",
	approvalWaitName:  "How long an approval question was open before it ended, by outcome; questions never put (remembered, unsupported) are not observed.",
	callLatencyName:   "Latency of decided requests forwarded to an upstream, from sending to the guarded answer, by server, method and result (ok, error).",
	upStartsName:      "Upstream children started and initialised, by server.",
	upCrashesName:     "Upstream children that ended without the gate stopping them, by server.",
	upRestartsName:    "Upstream children started in place of one that crashed, by server.",
	sessionsName:      "Host sessions being served.",
	sessionsTotalName: "Host sessions started.",
	guardName:         "Result-guard findings that refused what an upstream sent, by server and finding kind (one per finding, as in the audit log).",
	refusalsName:      "Requests refused before any policy decision, by the kind of their audit refusal record (malformed, ambiguous_params, not_initialized, invalid_envelope, unavailable, invalid_params, unknown_name, not_looked_up, unresolved, no_session; other for a kind outside that set).",
	auditFailuresName: "Decision, approval, guard, elicitation and refusal records that could not be written to the audit log; a call such a record would let through is refused.",
	reloadsName:       "Policy reloads by result: ok (a new revision is in force) or failed (an invalid or missing file; the last good policy stays).",
	reloadOKName:      "1 if the last policy reload applied (or none has been tried), 0 if the file's current content was refused and an older revision serves.",
	policyInfoName:    "The policy in force: always 1, with its revision (sha256: and 12 hex digits of the file) as a label.",
	buildInfoName:     "Always 1, with the gate's version as a label.",
}

// Options configure a Metrics.
type Options struct {
	// PolicyRevision returns the revision of the policy in force, read at
	// every scrape (mcp_gate_policy_info); nil leaves the metric out, and
	// "" (none loaded yet) leaves the series out.
	PolicyRevision func() string
	// Version is the gate's version, for mcp_gate_build_info.
	Version string
}

// Metrics holds the gate's series in a private set. Its methods implement
// proxy.Observer and policy.ReloadObserver and are safe for concurrent
// use; none blocks.
type Metrics struct {
	set *vm.Set

	decisions     family[[4]string, *vm.Counter]
	approvals     family[string, *vm.Counter]
	approvalWait  family[string, *vm.PrometheusHistogram]
	callLatency   family[[3]string, *vm.PrometheusHistogram]
	upStarts      family[string, *vm.Counter]
	upCrashes     family[string, *vm.Counter]
	upRestarts    family[string, *vm.Counter]
	guardRefusals family[[2]string, *vm.Counter]
	// refusals is one counter per refusal kind (audit.RefusalKinds), made
	// at New and never added to: a kind outside the set counts as
	// refusalOther, so the family has a fixed number of series.
	refusals      map[string]*vm.Counter
	refusalOther  *vm.Counter
	sessions      *vm.Gauge
	sessionsTotal *vm.Counter
	auditFailures *vm.Counter
	reloadOK      *vm.Gauge
	reloadsOK     *vm.Counter
	reloadsFailed *vm.Counter
}

// Buckets for the latency of a forwarded call, in seconds: from a local
// echo (well under a millisecond) to a slow remote tool.
var callBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Buckets for how long a human takes to answer, in seconds.
var approvalBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

// New returns a Metrics with every family registered; the Go runtime's
// and the process's metrics are added at each scrape.
func New(opts Options) *Metrics {
	// The library writes TYPE (and a bare HELP) lines only when this
	// process-wide switch is on. Only this package uses the library
	// (cmd/mcp-gate's TestMetricsLibraryOnlyThroughMetrics), so turning it
	// on here affects nothing else.
	vm.ExposeMetadata(true)
	s := vm.NewSet()
	m := &Metrics{set: s}
	counter := func(name string, labels ...string) func([]string) *vm.Counter {
		return func(values []string) *vm.Counter { return s.GetOrCreateCounter(seriesName(name, labels, values)) }
	}
	histogram := func(name string, buckets []float64, labels ...string) func([]string) *vm.PrometheusHistogram {
		return func(values []string) *vm.PrometheusHistogram {
			return s.GetOrCreatePrometheusHistogramExt(seriesName(name, labels, values), buckets)
		}
	}
	// Label names are listed in sorted order, as the Prometheus client
	// wrote them, so that the exposition is unchanged.
	m.decisions.init(func(k [4]string) []string { return []string{k[0], k[3], k[1], k[2]} },
		counter(decisionsName, "kind", "rule", "server", "verdict"))
	m.approvals.init(one, counter(approvalsName, "outcome"))
	m.approvalWait.init(one, histogram(approvalWaitName, approvalBuckets, "outcome"))
	m.callLatency.init(func(k [3]string) []string { return []string{k[1], k[2], k[0]} },
		histogram(callLatencyName, callBuckets, "method", "result", "server"))
	m.upStarts.init(one, counter(upStartsName, "server"))
	m.upCrashes.init(one, counter(upCrashesName, "server"))
	m.upRestarts.init(one, counter(upRestartsName, "server"))
	m.guardRefusals.init(func(k [2]string) []string { return []string{k[1], k[0]} },
		counter(guardName, "kind", "server"))
	m.refusals = map[string]*vm.Counter{}
	for _, k := range audit.RefusalKinds() {
		m.refusals[k] = s.NewCounter(seriesName(refusalsName, []string{"kind"}, []string{k}))
	}
	m.refusalOther = s.NewCounter(seriesName(refusalsName, []string{"kind"}, []string{refusalOther}))
	m.sessions = s.NewGauge(sessionsName, nil)
	m.sessionsTotal = s.NewCounter(sessionsTotalName)
	m.auditFailures = s.NewCounter(auditFailuresName)
	m.reloadOK = s.NewGauge(reloadOKName, nil)
	m.reloadOK.Set(1)
	// The reload results exist from the start, so that a rate() over them
	// is defined before the first reload.
	m.reloadsOK = s.NewCounter(seriesName(reloadsName, []string{"result"}, []string{"ok"}))
	m.reloadsFailed = s.NewCounter(seriesName(reloadsName, []string{"result"}, []string{"failed"}))
	s.NewGauge(seriesName(buildInfoName, []string{"version"}, []string{opts.Version}), func() float64 { return 1 })
	if rev := opts.PolicyRevision; rev != nil {
		// Written at each scrape rather than registered: one series, the
		// revision in force, never a stale one left behind by a reload,
		// and none before the first policy is loaded.
		s.RegisterMetricsWriter(func(w io.Writer) {
			if r := rev(); r != "" {
				vm.WriteMetadataIfNeeded(w, policyInfoName, "gauge")
				io.WriteString(w, seriesName(policyInfoName, []string{"revision"}, []string{r})+" 1\n")
			}
		})
	}
	return m
}

func one(k string) []string { return []string{k} }

// family is a labelled metric's series, looked up by label values. The
// lookup is cached per value set so that a call's hooks neither build nor
// hash a series name on every call (the library's GetOrCreate* do both).
// The cache is an immutable map swapped whole when a value set is first
// seen, so that a hook's lookup takes no lock; the value sets are bounded
// by the configuration, so copying on the rare insert is cheap.
type family[K comparable, M any] struct {
	series atomic.Pointer[map[K]M]
	mu     sync.Mutex // serialises inserts
	values func(K) []string
	create func([]string) M
}

func (f *family[K, M]) init(values func(K) []string, create func([]string) M) {
	f.values, f.create = values, create
	f.series.Store(&map[K]M{})
}

func (f *family[K, M]) get(k K) M {
	if s, ok := (*f.series.Load())[k]; ok {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.series.Load()
	if s, ok := old[k]; ok {
		return s
	}
	next := make(map[K]M, len(old)+1)
	maps.Copy(next, old)
	s := f.create(f.values(k))
	next[k] = s
	f.series.Store(&next)
	return s
}

// Decision counts a policy verdict.
func (m *Metrics) Decision(kind, server, verdict, rule string) {
	m.decisions.get([4]string{kind, server, verdict, rule}).Inc()
}

// Approval counts how a question ended and, when one was put, how long
// it was open.
func (m *Metrics) Approval(outcome string, wait time.Duration) {
	m.approvals.get(outcome).Inc()
	if wait > 0 {
		m.approvalWait.get(outcome).Update(wait.Seconds())
	}
}

// CallDone observes the latency of one forwarded request.
func (m *Metrics) CallDone(server, method string, took time.Duration, failed bool) {
	result := "ok"
	if failed {
		result = "error"
	}
	m.callLatency.get([3]string{server, method, result}).Update(took.Seconds())
}

// GuardRefused counts one refusing finding of the result guard.
func (m *Metrics) GuardRefused(server, kind string) {
	m.guardRefusals.get([2]string{server, kind}).Inc()
}

// AuditFailed counts a record not written to the audit log.
func (m *Metrics) AuditFailed() { m.auditFailures.Inc() }

// refusalOther is the kind label of a refusal of a kind outside
// audit.RefusalKinds: none today, and never a new series.
const refusalOther = "other"

// Refused counts a request refused before any decision, by its kind.
func (m *Metrics) Refused(kind string) {
	c, ok := m.refusals[kind]
	if !ok {
		c = m.refusalOther
	}
	c.Inc()
}

// SessionStarted counts a host session in.
func (m *Metrics) SessionStarted() {
	m.sessions.Inc()
	m.sessionsTotal.Inc()
}

// SessionEnded counts a host session out.
func (m *Metrics) SessionEnded() { m.sessions.Dec() }

// UpstreamStarted counts a child start, and a restart after a crash.
func (m *Metrics) UpstreamStarted(server string, restart bool) {
	m.upStarts.get(server).Inc()
	if restart {
		m.upRestarts.get(server).Inc()
	}
}

// UpstreamExited counts a crash; a deliberate stop is not one.
func (m *Metrics) UpstreamExited(server string, crashed bool) {
	if crashed {
		m.upCrashes.get(server).Inc()
	}
}

// PolicyReloaded counts a reload by its result.
func (m *Metrics) PolicyReloaded(ok bool) {
	if ok {
		m.reloadsOK.Inc()
		m.reloadOK.Set(1)
		return
	}
	m.reloadsFailed.Inc()
	m.reloadOK.Set(0)
}
