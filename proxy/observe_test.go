package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/metrics"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// events records what an Observer is told, one line per hook.
type events struct {
	mu  sync.Mutex
	all []string
}

func (e *events) add(format string, a ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, fmt.Sprintf(format, a...))
}

func (e *events) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.all)
}

func (e *events) Decision(kind, server, verdict, rule string) {
	e.add("decision %s %s %s %s", kind, server, verdict, rule)
}
func (e *events) Approval(outcome string, _ time.Duration) { e.add("approval %s", outcome) }
func (e *events) CallDone(server, method string, took time.Duration, failed bool) {
	e.add("call %s %s failed=%v positive=%v", server, method, failed, took > 0)
}
func (e *events) GuardRefused(server, kind string) { e.add("guard %s %s", server, kind) }
func (e *events) SessionStarted()                  { e.add("session +1") }
func (e *events) AuditFailed()                     { e.add("audit failed") }
func (e *events) Refused(kind string)              { e.add("refused %s", kind) }
func (e *events) SessionEnded()                    { e.add("session -1") }
func (e *events) UpstreamStarted(server string, restart bool) {
	e.add("upstream start %s restart=%v", server, restart)
}
func (e *events) UpstreamExited(server string, crashed bool) {
	e.add("upstream exit %s crashed=%v", server, crashed)
}

// The observer hears every decision with its verdict and rule, the
// forwarded call's latency (and only the forwarded one's), the session,
// the upstream's start and an approval's outcome, from the one call path.
func TestObserverSeesTheCallPath(t *testing.T) {
	a := &recorder{}
	ev := &events{}
	pol := static(t, "version: 1\nfallback: ask\ndeny: [mcp:alpha:rm]\nallow: [mcp:alpha:echo]\n")
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo", "rm", "write")}, pol, nil,
		func(o *Options) { o.Observer = ev })
	if r, _ := callText(t, f.sess, "alpha__echo", "x"); r.IsError {
		t.Fatalf("allow: %q", resultText(r))
	}
	if r, _ := callText(t, f.sess, "alpha__rm", "x"); !r.IsError {
		t.Fatal("rm was not denied")
	}
	if r, _ := callText(t, f.sess, "alpha__write", "x"); !r.IsError {
		t.Fatal("write was not refused (the host cannot be asked)")
	}
	// The pool reports a start on a goroutine of its own (PoolOptions.OnStart),
	// so the calls can be answered before it is observed: wait for it.
	for deadline := time.Now().Add(10 * time.Second); !slices.ContainsFunc(ev.lines(), func(l string) bool {
		return strings.HasPrefix(l, "upstream start")
	}) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	got := strings.Join(ev.lines(), "\n")
	for _, want := range []string{
		"session +1",
		"upstream start alpha restart=false",
		"decision tool alpha allow allow[0]",
		"call alpha tools/call failed=false positive=true",
		"decision tool alpha deny deny[0]",
		"decision tool alpha ask fallback",
		"approval unsupported",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the observer missed %q; it saw:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "call alpha"); n != 1 {
		t.Errorf("%d calls observed; only the allowed one was forwarded:\n%s", n, got)
	}
}

// A guard refusal is counted where it is audited, so that the two cannot
// disagree.
func TestObserverCountsGuardRefusals(t *testing.T) {
	ev := &events{}
	g, err := New(Options{Observer: ev})
	if err != nil {
		t.Fatal(err)
	}
	g.guardAudit(g.gateWho(), audit.Guard{Server: "s", Tool: "t", Outcome: "refused", Kind: "forged_approval"})
	g.guardAudit(g.gateWho(), audit.Guard{Server: "s", Tool: "t", Outcome: "neutralised", Kind: "hidden_characters"})
	g.guardAudit(g.gateWho(), audit.Guard{Server: "s", Tool: "t", Outcome: "logged", Kind: "forged_approval"})
	if got := ev.lines(); !slices.Equal(got, []string{"guard s forged_approval"}) {
		t.Errorf("observed %q; want one refusal (neutralised and logged-only findings are not refusals)", got)
	}
}

// Metrics off (a nil Observer, the default) cost the call path a nil
// comparison per hook: no allocation, no clock read. With an observer the
// hooks themselves allocate nothing either.
func TestObserverOffAllocatesNothing(t *testing.T) {
	call := policy.Call{Kind: policy.KindTool, Server: "s", Name: "t"}
	d := policy.Decision{Verdict: policy.Allow, Rule: "allow[0]"}
	ans := elicitation.Answer{Outcome: elicitation.Approved, Took: time.Second}
	for _, c := range []struct {
		name string
		obs  Observer
	}{{"off", nil}, {"noop", noopObserver{}}} {
		g, err := New(Options{Observer: c.obs})
		if err != nil {
			t.Fatal(err)
		}
		hooks := func() {
			sp := g.startCall()
			g.observeDecision(&call, &d)
			g.observeApproval(&ans)
			g.endCall(sp, "s", "tools/call", nil)
		}
		if n := testing.AllocsPerRun(1000, hooks); n != 0 {
			t.Errorf("%s: the observer hooks allocate %.1f times per call", c.name, n)
		}
		if c.obs == nil {
			if sp := g.startCall(); !sp.start.IsZero() {
				t.Error("off: startCall read the clock")
			}
		}
	}
}

type noopObserver struct{}

func (noopObserver) Decision(_, _, _, _ string)                    {}
func (noopObserver) Approval(string, time.Duration)                {}
func (noopObserver) CallDone(_, _ string, _ time.Duration, _ bool) {}
func (noopObserver) GuardRefused(_, _ string)                      {}
func (noopObserver) SessionStarted()                               {}
func (noopObserver) AuditFailed()                                  {}
func (noopObserver) Refused(string)                                {}
func (noopObserver) SessionEnded()                                 {}
func (noopObserver) UpstreamStarted(string, bool)                  {}
func (noopObserver) UpstreamExited(string, bool)                   {}

// BenchmarkObserverHooks is what the hooks of one decided and forwarded
// call cost, with metrics off (nil) and with an observer that does
// nothing (the interface calls alone).
//
//	go test -run '^$' -bench ObserverHooks ./proxy
func BenchmarkObserverHooks(b *testing.B) {
	call := policy.Call{Kind: policy.KindTool, Server: "s", Name: "t"}
	d := policy.Decision{Verdict: policy.Allow, Rule: "allow[0]"}
	for _, c := range []struct {
		name string
		obs  Observer
	}{{"off", nil}, {"noop", noopObserver{}}} {
		b.Run(c.name, func(b *testing.B) {
			g, err := New(Options{Observer: c.obs})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				sp := g.startCall()
				g.observeDecision(&call, &d)
				g.endCall(sp, "s", "tools/call", nil)
			}
		})
	}
}

// BenchmarkMetricsShare measures what metrics add to relaying one
// tools/call through the gate: two gates over pipes, one with no observer
// and one with package metrics, called alternately so that drift on a busy
// machine hits both alike.
//
//	go test -run '^$' -bench MetricsShare -benchtime 2000x ./proxy
func BenchmarkMetricsShare(b *testing.B) {
	result := `{"content":[{"type":"text","text":"ok"}]}`
	off := pipeGate(b, result, nil)
	on := pipeGate(b, result, metrics.New(metrics.Options{}))
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{}}}`
	for range 10 {
		off(call)
		on(call)
	}
	var tOff, tOn time.Duration
	b.ResetTimer()
	timed := func(f func(string)) time.Duration {
		t0 := time.Now()
		f(call)
		return time.Since(t0)
	}
	for i := range b.N {
		// Which goes first alternates too: the second of a pair finds the
		// caches and the scheduler as the first left them.
		if i%2 == 0 {
			tOff += timed(off)
			tOn += timed(on)
		} else {
			tOn += timed(on)
			tOff += timed(off)
		}
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((tOff/n).Nanoseconds())/1e3, "off-µs/op")
	b.ReportMetric(float64((tOn/n).Nanoseconds())/1e3, "on-µs/op")
	b.ReportMetric(100*float64(tOn-tOff)/float64(tOff), "%-added-by-metrics")
}

// pipeGate runs a Gate with one in-memory upstream over pipes, initialized,
// and returns a round trip of one request line.
func pipeGate(b *testing.B, result string, obs Observer) func(string) {
	return pipeGateAudited(b, result, obs, nil)
}

// pipeGateAudited is pipeGate with the decision audit written to a (nil:
// discarded before it is formatted).
func pipeGateAudited(b *testing.B, result string, obs Observer, a *audit.Logger) func(string) {
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "up", Type: upstream.TypeStdio, Command: "in-memory"}},
		Launcher: &rawLauncher{result: result},
		Policy:   static(b, allowAll),
		Logger:   slog.New(slog.DiscardHandler),
		Observer: obs,
		Audit:    a,
	})
	if err != nil {
		b.Fatal(err)
	}
	hostR, gateW := io.Pipe()
	gateR, hostW := io.Pipe()
	go g.Serve(context.Background(), gateR, gateW)
	b.Cleanup(func() { hostW.Close() })
	rd := bufio.NewReaderSize(hostR, 1<<20)
	roundTrip := func(line string) {
		if _, err := io.WriteString(hostW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := rd.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(resp), `"error"`) || strings.Contains(string(resp), `isError`) {
			b.Fatalf("unexpected response: %s", resp)
		}
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	return roundTrip
}

// BenchmarkRelayCall is one allowed tools/call relayed in process, its
// decision audited (formatted, written to io.Discard) and its result
// guarded: the gate's own work per call, allocations included, without
// the system calls and process switches e2e/bench measures.
//
//	go test -run '^$' -bench RelayCall -benchmem ./proxy
func BenchmarkRelayCall(b *testing.B) {
	call := pipeGateAudited(b, `{"content":[{"type":"text","text":"ok"}]}`, nil, audit.New(io.Discard))
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{"text":"hello"}}}`
	for range 10 {
		call(line)
	}
	b.ReportAllocs()
	for b.Loop() {
		call(line)
	}
}
