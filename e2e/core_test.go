package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue #2: both reference servers listed under prefixes, calls through to
// each, a resource read and a prompt get, and a third server that exits at
// once hiding neither.
func TestReferenceServersThroughGate(t *testing.T) {
	t.Parallel()
	needNode(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gateCommand(t, map[string]server{
		"everything": everything(),
		"filesystem": filesystem(root),
		"broken":     testserver("exit"),
	})
	sess := g.connect(t, nil)

	tools := toolNames(t, sess)
	for _, want := range []string{"everything__echo", "everything__get-sum", "filesystem__read_text_file", "filesystem__write_file", "filesystem__list_directory"} {
		if tools[want] == nil {
			t.Errorf("tools/list lacks %s; got %d tools", want, len(tools))
		}
	}
	for name := range tools {
		if !strings.HasPrefix(name, "everything__") && !strings.HasPrefix(name, "filesystem__") {
			t.Errorf("tool %q has no server prefix", name)
		}
		if len("mcp__gate__"+name) > 64 {
			t.Errorf("tool %q is over the host's 64-character limit with its prefix", name)
		}
	}
	if !waitStderr(g.stderr, "missing API key", 1) {
		t.Errorf("the gate did not log the exiting server's stderr tail:\n%s", g.stderr.String())
	}

	if got := resultText(call(t, sess, "everything__echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
		t.Errorf("everything__echo: got %q", got)
	}
	if got := resultText(call(t, sess, "filesystem__read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})); got != "hello from disk" {
		t.Errorf("filesystem__read_text_file: got %q", got)
	}
	res := call(t, sess, "filesystem__write_file", map[string]any{"path": filepath.Join(root, "new.txt"), "content": "written"})
	if res.IsError {
		t.Fatalf("write_file: %s", resultText(res))
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new.txt")); string(b) != "written" {
		t.Errorf("write_file did not write through the gate: %q", b)
	}

	rr, err := sess.ReadResource(ctxT(t, 30*time.Second), &mcp.ReadResourceParams{URI: "demo://resource/static/document/instructions.md"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "Everything") {
		t.Errorf("resources/read: unexpected contents %+v", rr.Contents)
	}
	// A URI no server listed, but one of everything's templates produces.
	rr, err = sess.ReadResource(ctxT(t, 30*time.Second), &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/3"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "Resource 3") {
		t.Errorf("resources/read of a templated URI: %v %+v", err, rr)
	}

	prompts, err := sess.ListPrompts(ctxT(t, 30*time.Second), nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	found := false
	for _, p := range prompts.Prompts {
		found = found || p.Name == "everything__args-prompt"
	}
	if !found {
		t.Fatalf("prompts/list lacks everything__args-prompt: %+v", prompts.Prompts)
	}
	pr, err := sess.GetPrompt(ctxT(t, 30*time.Second), &mcp.GetPromptParams{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Paris", "state": "TX"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "What's weather in Paris, TX?" {
		t.Errorf("prompts/get: got %+v", pr.Messages[0].Content)
	}
	comp, err := sess.Complete(ctxT(t, 30*time.Second), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
	})
	if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != "Engineering" {
		t.Errorf("completion/complete: %v %+v", err, comp)
	}

	// An upstream JSON-RPC error keeps its code.
	_, err = sess.ReadResource(ctxT(t, 30*time.Second), &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/abc"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32603 || !strings.Contains(werr.Message, "Unknown resource") {
		t.Errorf("upstream error: got %v", err)
	}
}

// Issue #2: no child process exists before the first request that needs one.
func TestNoChildBeforeFirstRequest(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest"), "other": testserver("honest")})
	sess := g.connect(t, nil)
	if err := sess.Ping(ctxT(t, 10*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if kids := children(t, g.cmd.Process.Pid); len(kids) != 0 {
		t.Fatalf("the gate has %d child processes before any request needed one", len(kids))
	}
	// The first call to a server starts that one only.
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "x"})); got != "x" {
		t.Fatalf("echo: %q", got)
	}
	if kids := children(t, g.cmd.Process.Pid); len(kids) != 1 {
		t.Fatalf("after one call: %d children, want 1", len(kids))
	}
}

// Issue #2: ten concurrent first calls start a server once.
func TestConcurrentFirstCallsStartOnce(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	sess := g.connect(t, nil)
	// The host may call a tool it has not listed in this session (hosts cache
	// tool lists); the gate loads its catalog to resolve the name.
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": strings.Repeat("a", i)}})
			if err != nil || resultText(res) != strings.Repeat("a", i) {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d of 10 concurrent calls failed", bad.Load())
	}
	if n := countStderr(g.stderr, `msg="upstream started" server=honest`, 1); n != 1 {
		t.Fatalf("the server was started %d times, want 1", n)
	}
}

// Issue #2: progress flows back with the host's own token; cancelling a call
// reaches the upstream.
func TestProgressAndCancellation(t *testing.T) {
	t.Parallel()
	needNode(t)
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"everything": everything(), "honest": testserver("honest", "--events", events)})
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	sess := g.connect(t, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
		},
	})
	p := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
	p.SetProgressToken("host-token-7")
	res, err := sess.CallTool(ctxT(t, 60*time.Second), p)
	if err != nil || !strings.Contains(resultText(res), "completed") {
		t.Fatalf("long-running operation: %v %v", err, res)
	}
	// The client handles notifications on its own goroutines: the last one
	// may be handled after the result.
	waitFor(t, "4 progress notifications", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= 4
	})
	mu.Lock()
	for _, pr := range progress {
		if pr.ProgressToken != "host-token-7" {
			t.Errorf("progress carries token %v, want the host's own", pr.ProgressToken)
		}
	}
	if len(progress) != 4 {
		t.Errorf("got %d progress notifications, want 4", len(progress))
	}
	mu.Unlock()

	// Cancel a slow call: the upstream must hear of it.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "honest__slow", Arguments: map[string]any{"steps": 1000, "ms": 20}})
		done <- err
	}()
	// The upstream runs the call: cancelled before it reached the
	// upstream (the honest server still starting, say), the call would
	// be let go by the gate alone.
	waitFor(t, "the slow call to start upstream", 30*time.Second, func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "slow started")
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
	waitFor(t, "the upstream to see the cancellation", 10*time.Second, func() bool {
		b, _ := os.ReadFile(events)
		return strings.Contains(string(b), "cancelled slow")
	})
	// The session goes on.
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "after"})); got != "after" {
		t.Fatalf("echo after a cancel: %q", got)
	}
}

// Issue #2: an upstream's elicitation, sampling and roots requests reach the
// host and its answers go back; the elicitation names the server.
func TestUpstreamRequestsRelayed(t *testing.T) {
	t.Parallel()
	needNode(t)
	// server-everything's elicitation tool echoes the user's answer,
	// {"action":"accept","content":...}, into its result: an elicitation
	// result inside a tool result, which the result guard refuses (issue #5)
	// unless it is the host's own answer to that server during the call,
	// which the guard exempts and audits as such (issue 11; before it, this
	// test needed the guard set to log-only for the server, which it keeps).
	pol := writePolicy(t, "version: 1\nfallback: deny\nallow: [\"mcp:**\", \"sampling:**\"]\nguard:\n  log_only: [everything]\n")
	g := gateCommand(t, map[string]server{"everything": everything()}, "--policy", pol)
	var elicitMsg atomic.Value
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicitMsg.Store(req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "check": true}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled!"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///e2e/root", Name: "e2e-root"})
	sess := g.connectClient(t, client)

	tools := toolNames(t, sess)
	for _, want := range []string{"everything__trigger-elicitation-request", "everything__trigger-sampling-request", "everything__get-roots-list"} {
		if tools[want] == nil {
			t.Fatalf("the capability-gated tool %s is missing: the upstream did not see the host's capabilities", want)
		}
	}
	if got := resultText(call(t, sess, "everything__trigger-elicitation-request", map[string]any{})); !strings.Contains(got, "Name: Ada") {
		t.Errorf("elicitation result: %q", got)
	}
	if m, _ := elicitMsg.Load().(string); !strings.HasPrefix(m, "[everything] ") {
		t.Errorf("the elicitation message does not name its server: %q", m)
	}
	logged := false
	for _, l := range g.auditLines(t) {
		logged = logged || (l["event"] == "guard" && l["outcome"] == "exempted" && l["server"] == "everything")
	}
	if !logged {
		t.Errorf("the audit log has no exempted guard record for the elicitation result")
	}
	if got := resultText(call(t, sess, "everything__trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})); !strings.Contains(got, "e2e-model") {
		t.Errorf("sampling result: %q", got)
	}
	if got := resultText(call(t, sess, "everything__get-roots-list", map[string]any{})); !strings.Contains(got, "file:///e2e/root") {
		t.Errorf("roots result: %q", got)
	}
}

// Issue #2: list_changed from an upstream reaches the host, and the new list
// has the new tool.
func TestListChangedRelayed(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	changed := make(chan struct{}, 10)
	sess := g.connect(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if toolNames(t, sess)["honest__extra"] != nil {
		t.Fatal("honest__extra listed before the toggle")
	}
	call(t, sess, "honest__toggle", map[string]any{})
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/list_changed reached the host")
	}
	if toolNames(t, sess)["honest__extra"] == nil {
		t.Fatal("honest__extra missing after list_changed")
	}
	if got := resultText(call(t, sess, "honest__extra", map[string]any{})); got != "extra" {
		t.Fatalf("calling the new tool: %q", got)
	}
}

// Issue #2: a server that crashes mid-call fails that call with a clear
// error; the next call starts it again.
func TestCrashedUpstream(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest"), "other": testserver("honest")})
	sess := g.connect(t, nil)
	toolNames(t, sess)
	_, err := sess.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "honest__crash", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, "exit status 7") || !strings.Contains(werr.Message, "crashing on purpose") {
		t.Fatalf("call to a crashing server: got %v, want an error with its exit status and stderr", err)
	}
	if got := resultText(call(t, sess, "other__echo", map[string]any{"text": "still here"})); got != "still here" {
		t.Fatalf("the other server: %q", got)
	}
	// Crashed soon after start: the gate backs off, then restarts it.
	waitFor(t, "the crashed server to come back", 30*time.Second, func() bool {
		res, err := sess.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "back"}})
		return err == nil && resultText(res) == "back"
	})
}
