package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// recorder is an in-memory upstream that records the calls it receives.
type recorder struct {
	mu    sync.Mutex
	calls []string // "tool args"
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

type textIn struct {
	Text string `json:"text"`
}

// server builds a go-sdk server with the named tools, each echoing its text.
func (r *recorder) server(tools ...string) upstreamtest.ServeFunc {
	return upstreamtest.GoSDK(func(s *mcp.Server) {
		for _, name := range tools {
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "tool " + name},
				func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
					r.mu.Lock()
					r.calls = append(r.calls, name+" "+in.Text)
					r.mu.Unlock()
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + in.Text}}}, nil, nil
				})
		}
	})
}

type fixture struct {
	gate     *Gate
	launcher *upstreamtest.Launcher
	sess     *mcp.ClientSession
}

// start runs a Gate over in-memory pipes with a go-sdk client as the host.
func start(t *testing.T, servers map[string]upstreamtest.ServeFunc, pol *policy.Store, client *mcp.Client, opts ...func(*Options)) *fixture {
	t.Helper()
	l := &upstreamtest.Launcher{Servers: servers}
	o := Options{
		Servers:      l.Configs(),
		Launcher:     l,
		StartTimeout: 10 * time.Second,
		Policy:       pol,
		Logger:       slog.New(slog.DiscardHandler),
	}
	for _, f := range opts {
		f(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	hostR, gateW := io.Pipe()
	gateR, hostW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), gateR, gateW) }()
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.IOTransport{Reader: hostR, Writer: hostW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sess.Close()
		hostW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the host closed")
		}
	})
	return &fixture{gate: g, launcher: l, sess: sess}
}

func static(t testing.TB, text string) *policy.Store {
	t.Helper()
	p, _, err := policy.Parse("test.yaml", []byte(text), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewStatic(p)
}

const allowAll = "version: 1\nfallback: deny\nallow: [\"mcp:**\", \"sampling:**\"]\n"

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func callText(t *testing.T, s *mcp.ClientSession, name, text string) (*mcp.CallToolResult, error) {
	t.Helper()
	return s.CallTool(ctx10(t), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestAggregatesAndRelays(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo", "read"), "beta": b.server("echo")}, static(t, allowAll), nil)
	res, err := f.sess.ListTools(ctx10(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "alpha__echo,alpha__read,beta__echo" {
		t.Fatalf("tools/list: %s", got)
	}
	r, err := callText(t, f.sess, "beta__echo", "hi")
	if err != nil || resultText(r) != "echo:hi" {
		t.Fatalf("call: %v %v", err, r)
	}
	if got := b.seen(); len(got) != 1 || got[0] != "echo hi" {
		t.Fatalf("beta saw %v", got)
	}
	if len(a.seen()) != 0 {
		t.Fatalf("alpha saw %v", a.seen())
	}
	_, err = callText(t, f.sess, "gamma__echo", "x")
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `unknown tool "gamma__echo"`) {
		t.Fatalf("unknown tool: %v", err)
	}
}

// Issue #2: ten concurrent first calls start a server once, and only that
// server.
func TestSingleFlightStart(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "beta": b.server("echo")}, static(t, allowAll), nil)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := callText(t, f.sess, "alpha__echo", fmt.Sprint(i)); err != nil || r.IsError {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if n := f.launcher.Launches("alpha"); n != 1 {
		t.Fatalf("alpha launched %d times", n)
	}
	if n := f.launcher.Launches("beta"); n != 0 {
		t.Fatalf("beta launched %d times by calls to alpha", n)
	}
}

func TestFailingServerLeftOut(t *testing.T) {
	a := &recorder{}
	l := map[string]upstreamtest.ServeFunc{"alpha": a.server("echo"), "broken": a.server("echo")}
	f := start(t, l, static(t, allowAll), nil)
	f.launcher.FailLaunches("broken", errors.New("exec: no such file"))
	res, err := f.sess.ListTools(ctx10(t), nil)
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "alpha__echo" {
		t.Fatalf("tools/list with a broken server: %v %+v", err, res)
	}
	_, err = callText(t, f.sess, "broken__echo", "x")
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("calling the broken server: %v", err)
	}
}

func TestGatePagination(t *testing.T) {
	a := &recorder{}
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("t1", "t2", "t3", "t4", "t5")}, static(t, allowAll), nil,
		func(o *Options) { o.PageSize = 2 })
	first, err := f.sess.ListTools(ctx10(t), nil)
	if err != nil || len(first.Tools) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	var all []string
	for tool, err := range f.sess.Tools(ctx10(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tool.Name)
	}
	if len(all) != 5 {
		t.Fatalf("all pages: %v", all)
	}
	_, err = f.sess.ListTools(ctx10(t), &mcp.ListToolsParams{Cursor: "garbage"})
	if err == nil || !strings.Contains(err.Error(), "invalid cursor") {
		t.Fatalf("bad cursor: %v", err)
	}
}

// Issue #3: deny is an isError result naming the rule; a hidden tool is not
// listed; ask without a host that can answer is a refusal.
func TestPolicyInProxy(t *testing.T) {
	a := &recorder{}
	pol := static(t, "version: 1\nfallback: ask\ndeny: [mcp:alpha:rm]\nallow: [mcp:alpha:echo]\n")
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo", "rm", "write")}, pol, nil)
	res, err := f.sess.ListTools(ctx10(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "alpha__rm" {
			t.Fatal("a denied tool is listed")
		}
	}
	if r, _ := callText(t, f.sess, "alpha__rm", "x"); !r.IsError || !strings.Contains(resultText(r), "deny[0]") {
		t.Fatalf("deny: %q", resultText(r))
	}
	if r, _ := callText(t, f.sess, "alpha__write", "x"); !r.IsError || !strings.Contains(resultText(r), "cannot ask") {
		t.Fatalf("ask without elicitation: %q", resultText(r))
	}
	if r, _ := callText(t, f.sess, "alpha__echo", "x"); r.IsError {
		t.Fatalf("allow: %q", resultText(r))
	}
	if got := a.seen(); len(got) != 1 || got[0] != "echo x" {
		t.Fatalf("the upstream saw %v; only the allowed call may reach it", got)
	}
}

// Issue #4: twenty questions open at once; other calls are not held up.
func TestManyAsksInFlight(t *testing.T) {
	a := &recorder{}
	release := make(chan struct{})
	var open atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			open.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	pol := static(t, "version: 1\nfallback: deny\napproval:\n  timeout: 1m\nask: [mcp:alpha:write]\nallow: [mcp:alpha:echo]\n")
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo", "write")}, pol, client)
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := callText(t, f.sess, "alpha__write", fmt.Sprint(i)); err == nil && !r.IsError {
				ok.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for open.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if open.Load() != 20 {
		t.Fatalf("%d questions open, want 20", open.Load())
	}
	if r, err := callText(t, f.sess, "alpha__echo", "meanwhile"); err != nil || r.IsError {
		t.Fatalf("an allowed call while 20 questions are open: %v %v", err, r)
	}
	close(release)
	wg.Wait()
	if ok.Load() != 20 {
		t.Fatalf("%d of 20 approved calls went through", ok.Load())
	}
}

// Issue #3: a reload that hides a tool tells the host; the next call sees
// the new policy.
func TestPolicyReloadNotifiesHost(t *testing.T) {
	a := &recorder{}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nfallback: deny\nallow: [mcp:alpha:echo]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var gate atomic.Pointer[Gate]
	store, err := policy.Watch(t.Context(), path, policy.Options{}, nil, func(o, n *policy.Policy) {
		if g := gate.Load(); g != nil {
			g.PolicyChanged(o, n)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo")}, store, client)
	gate.Store(f.gate)
	if _, err := f.sess.ListTools(ctx10(t), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", []byte("version: 1\nfallback: deny\ndeny: [mcp:alpha:echo]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after a reload that hid a tool")
	}
	if r, _ := callText(t, f.sess, "alpha__echo", "x"); !r.IsError {
		t.Fatal("the reload did not take effect")
	}
}

// Issue #3, the property: over random policies and calls, the upstream
// receives exactly the calls whose verdict is allow.
func TestUpstreamSeesOnlyAllowedCalls(t *testing.T) {
	tools := []string{"read", "write", "rm", "list"}
	verdicts := []string{"allow", "ask", "deny"}
	for seed := range 12 {
		a := &recorder{}
		rng := uint64(seed*7919 + 1)
		next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
		var text strings.Builder
		fmt.Fprintf(&text, "version: 1\nfallback: %s\nrules:\n", []string{"ask", "deny"}[next(2)])
		for i := range 1 + next(5) {
			fmt.Fprintf(&text, "  - name: r%d\n    match: %q\n    action: %s\n", i, "mcp:alpha:"+[]string{"r*", "w*", "*", "rm", "list"}[next(5)], verdicts[next(3)])
			if next(2) == 0 {
				fmt.Fprintf(&text, "    when: args.text == %q\n", []string{"a", "b"}[next(2)])
			}
		}
		pol := static(t, text.String())
		f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server(tools...)}, pol, nil)
		var want []string
		for i := range 20 {
			tool, arg := tools[next(len(tools))], []string{"a", "b", "c"}[next(3)]
			d := pol.Current().Decide(policy.Call{Server: "alpha", Name: tool, Args: json.RawMessage(fmt.Sprintf(`{"text":%q}`, arg))})
			r, err := callText(t, f.sess, "alpha__"+tool, arg)
			if err != nil {
				t.Fatalf("seed %d call %d: %v", seed, i, err)
			}
			if d.Verdict == policy.Allow {
				want = append(want, tool+" "+arg)
				if r.IsError {
					t.Fatalf("seed %d: %s(%s) allowed by the policy but refused: %s", seed, tool, arg, resultText(r))
				}
			} else if !r.IsError {
				t.Fatalf("seed %d: %s(%s) is %s but went through\n%s", seed, tool, arg, d.Verdict, text.String())
			}
		}
		if got := a.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("seed %d: the upstream saw %v, want exactly %v\n%s", seed, got, want, text.String())
		}
	}
}
