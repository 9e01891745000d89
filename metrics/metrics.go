// Package metrics counts what the gate does, in Prometheus form: decisions
// by verdict, server and rule; approvals by outcome and how long the human
// took; the latency of forwarded calls per server; upstream starts,
// crashes and restarts; open host sessions; guard refusals; policy reloads
// and the revision in force.
//
// A Metrics is created only when the operator asks for it (serve
// --ops-addr, or the HTTP front end): the gate reaches it through
// proxy.Observer and policy.ReloadObserver, whose nil values cost a nil
// comparison. Its registry is its own, never Prometheus' global one, so
// that two gates in one process (tests) do not collide and nothing is
// registered at all until New is called.
//
// Every label value comes from the operator's configuration or the gate's
// own vocabulary (server keys, rule names, verdicts, outcomes), never from
// a message, so the number of series is bounded by the configuration: tool
// names, URIs and users are not labels.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name.
const Namespace = "mcp_gate"

// Options configure a Metrics.
type Options struct {
	// PolicyRevision returns the revision of the policy in force, read at
	// every scrape (mcp_gate_policy_info); nil leaves the metric out, and
	// "" (none loaded yet) leaves the series out.
	PolicyRevision func() string
	// Version is the gate's version, for mcp_gate_build_info.
	Version string
}

// Metrics holds the gate's collectors in a private registry. Its methods
// implement proxy.Observer and policy.ReloadObserver and are safe for
// concurrent use; none blocks.
type Metrics struct {
	reg *prometheus.Registry

	decisions     *prometheus.CounterVec
	approvals     *prometheus.CounterVec
	approvalWait  *prometheus.HistogramVec
	callLatency   *prometheus.HistogramVec
	upStarts      *prometheus.CounterVec
	upCrashes     *prometheus.CounterVec
	upRestarts    *prometheus.CounterVec
	sessions      prometheus.Gauge
	sessionsTotal prometheus.Counter
	guardRefusals *prometheus.CounterVec
	auditFailures prometheus.Counter
	reloads       *prometheus.CounterVec
	reloadOK      prometheus.Gauge

	// Label lookups are cached per value set, so that a call's hooks do
	// not hash labels on every call (CounterVec.WithLabelValues does).
	mu        sync.RWMutex
	decided   map[[4]string]prometheus.Counter
	called    map[[3]string]prometheus.Observer
	refusedBy map[[2]string]prometheus.Counter
}

// Buckets for the latency of a forwarded call, in seconds: from a local
// echo (well under a millisecond) to a slow remote tool.
var callBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Buckets for how long a human takes to answer, in seconds.
var approvalBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

// New returns a Metrics with every collector registered, the Go runtime's
// and the process's included.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg:       prometheus.NewRegistry(),
		decided:   map[[4]string]prometheus.Counter{},
		called:    map[[3]string]prometheus.Observer{},
		refusedBy: map[[2]string]prometheus.Counter{},
	}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "decisions_total",
		Help: "Policy decisions, by the kind of request (tool, prompt, resource, sampling), upstream server, verdict (allow, ask, deny) and deciding rule.",
	}, []string{"kind", "server", "verdict", "rule"})
	m.approvals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "approvals_total",
		Help: "Approval questions by outcome (approved, approved_session, remembered, declined, cancelled, timeout, unsupported, withdrawn, error, malformed).",
	}, []string{"outcome"})
	m.approvalWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "approval_wait_seconds",
		Help:    "How long an approval question was open before it ended, by outcome; questions never put (remembered, unsupported) are not observed.",
		Buckets: approvalBuckets,
	}, []string{"outcome"})
	m.callLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "call_duration_seconds",
		Help:    "Latency of decided requests forwarded to an upstream, from sending to the guarded answer, by server, method and result (ok, error).",
		Buckets: callBuckets,
	}, []string{"server", "method", "result"})
	m.upStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "upstream_starts_total",
		Help: "Upstream children started and initialised, by server.",
	}, []string{"server"})
	m.upCrashes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "upstream_crashes_total",
		Help: "Upstream children that ended without the gate stopping them, by server.",
	}, []string{"server"})
	m.upRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "upstream_restarts_total",
		Help: "Upstream children started in place of one that crashed, by server.",
	}, []string{"server"})
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "sessions",
		Help: "Host sessions being served.",
	})
	m.sessionsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "sessions_started_total",
		Help: "Host sessions started.",
	})
	m.guardRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "guard_refusals_total",
		Help: "Result-guard findings that refused what an upstream sent, by server and finding kind (one per finding, as in the audit log).",
	}, []string{"server", "kind"})
	m.auditFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "audit_write_failures_total",
		Help: "Decision and approval records that could not be written to the audit log; a call such a record would let through is refused.",
	})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "policy_reloads_total",
		Help: "Policy reloads by result: ok (a new revision is in force) or failed (an invalid or missing file; the last good policy stays).",
	}, []string{"result"})
	m.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "policy_last_reload_success",
		Help: "1 if the last policy reload applied (or none has been tried), 0 if the file's current content was refused and an older revision serves.",
	})
	m.reloadOK.Set(1)
	for _, c := range []prometheus.Collector{
		m.decisions, m.approvals, m.approvalWait, m.callLatency,
		m.upStarts, m.upCrashes, m.upRestarts, m.sessions, m.sessionsTotal,
		m.guardRefusals, m.auditFailures, m.reloads, m.reloadOK,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	// The reload results exist from the start, so that a rate() over them
	// is defined before the first reload.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	if opts.PolicyRevision != nil {
		f(&revisionCollector{rev: opts.PolicyRevision, desc: prometheus.NewDesc(
			prometheus.BuildFQName(Namespace, "policy", "info"),
			"The policy in force: always 1, with its revision (sha256: and 12 hex digits of the file) as a label.",
			[]string{"revision"}, nil)})
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help:        "Always 1, with the gate's version as a label.",
		ConstLabels: prometheus.Labels{"version": opts.Version},
	}, func() float64 { return 1 }))
	return m
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry: m.reg, // counts its own scrapes and errors there
		// A scrape that cannot be gathered whole says so with a 500 rather
		// than serving a partial view an alert could misread.
		ErrorHandling:       promhttp.HTTPErrorOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// Registry is the private registry, for tests and for a caller that adds
// collectors of its own (the HTTP front end's).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Decision counts a policy verdict.
func (m *Metrics) Decision(kind, server, verdict, rule string) {
	k := [4]string{kind, server, verdict, rule}
	m.mu.RLock()
	c := m.decided[k]
	m.mu.RUnlock()
	if c == nil {
		c = m.decisions.WithLabelValues(kind, server, verdict, rule)
		m.mu.Lock()
		m.decided[k] = c
		m.mu.Unlock()
	}
	c.Inc()
}

// Approval counts how a question ended and, when one was put, how long
// it was open.
func (m *Metrics) Approval(outcome string, wait time.Duration) {
	m.approvals.WithLabelValues(outcome).Inc()
	if wait > 0 {
		m.approvalWait.WithLabelValues(outcome).Observe(wait.Seconds())
	}
}

// CallDone observes the latency of one forwarded request.
func (m *Metrics) CallDone(server, method string, took time.Duration, failed bool) {
	result := "ok"
	if failed {
		result = "error"
	}
	k := [3]string{server, method, result}
	m.mu.RLock()
	o := m.called[k]
	m.mu.RUnlock()
	if o == nil {
		o = m.callLatency.WithLabelValues(server, method, result)
		m.mu.Lock()
		m.called[k] = o
		m.mu.Unlock()
	}
	o.Observe(took.Seconds())
}

// GuardRefused counts one refusing finding of the result guard.
func (m *Metrics) GuardRefused(server, kind string) {
	k := [2]string{server, kind}
	m.mu.RLock()
	c := m.refusedBy[k]
	m.mu.RUnlock()
	if c == nil {
		c = m.guardRefusals.WithLabelValues(server, kind)
		m.mu.Lock()
		m.refusedBy[k] = c
		m.mu.Unlock()
	}
	c.Inc()
}

// AuditFailed counts a decision or approval record not written.
func (m *Metrics) AuditFailed() { m.auditFailures.Inc() }

// SessionStarted counts a host session in.
func (m *Metrics) SessionStarted() {
	m.sessions.Inc()
	m.sessionsTotal.Inc()
}

// SessionEnded counts a host session out.
func (m *Metrics) SessionEnded() { m.sessions.Dec() }

// UpstreamStarted counts a child start, and a restart after a crash.
func (m *Metrics) UpstreamStarted(server string, restart bool) {
	m.upStarts.WithLabelValues(server).Inc()
	if restart {
		m.upRestarts.WithLabelValues(server).Inc()
	}
}

// UpstreamExited counts a crash; a deliberate stop is not one.
func (m *Metrics) UpstreamExited(server string, crashed bool) {
	if crashed {
		m.upCrashes.WithLabelValues(server).Inc()
	}
}

// PolicyReloaded counts a reload by its result.
func (m *Metrics) PolicyReloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("ok").Inc()
		m.reloadOK.Set(1)
		return
	}
	m.reloads.WithLabelValues("failed").Inc()
	m.reloadOK.Set(0)
}

// revisionCollector reports the policy revision in force at scrape time:
// one series, never a stale one left behind by a reload.
type revisionCollector struct {
	rev  func() string
	desc *prometheus.Desc
}

func (c *revisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *revisionCollector) Collect(ch chan<- prometheus.Metric) {
	// None before the first policy is loaded: no revision is in force.
	if rev := c.rev(); rev != "" {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, rev)
	}
}
