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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const askEchoPolicy = `version: 1
fallback: deny
approval:
  timeout: 2s
ask:
  - mcp:honest:echo
  - mcp:honest:slow
`

// asker is a host whose user answers approval questions by a script.
type asker struct {
	mu       sync.Mutex
	answer   func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	asked    atomic.Int32
	messages []string
}

func (a *asker) handler(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.asked.Add(1)
	a.mu.Lock()
	a.messages = append(a.messages, req.Params.Message)
	f := a.answer
	a.mu.Unlock()
	return f(ctx, req)
}

func (a *asker) set(f func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)) {
	a.mu.Lock()
	a.answer = f
	a.mu.Unlock()
}

func reply(action string, content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}
}

// Issue #4: every outcome of asking, through the real binary and a real
// client that answers elicitations.
func TestApprovalOutcomes(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", writePolicy(t, askEchoPolicy))
	a := &asker{}
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: a.handler})

	cases := []struct {
		name    string
		answer  func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		allowed bool
		says    string
	}{
		{"yes", reply("accept", map[string]any{"approve": true}), true, ""},
		{"no", reply("accept", map[string]any{"approve": false}), false, "the user answered no"},
		{"decline", reply("decline", nil), false, "declined by the user"},
		{"cancel", reply("cancel", nil), false, "dismissed"},
		{"host error", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("the dialog crashed")
		}, false, "could not ask"},
		{"no answer", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the gate cancels the question when it gives up
			return nil, ctx.Err()
		}, false, "no answer within 2s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a.set(c.answer)
			before := a.asked.Load()
			res := call(t, sess, "honest__echo", map[string]any{"text": "call-" + c.name})
			if a.asked.Load() != before+1 {
				t.Fatalf("the human was asked %d times, want once", a.asked.Load()-before)
			}
			b, _ := os.ReadFile(events)
			reached := strings.Contains(string(b), "echo call-"+c.name)
			if reached != c.allowed {
				t.Errorf("the call reached the upstream: %v, want %v", reached, c.allowed)
			}
			if c.allowed {
				if res.IsError || resultText(res) != "call-"+c.name {
					t.Fatalf("approved call: %q", resultText(res))
				}
				return
			}
			if !res.IsError || !strings.Contains(resultText(res), c.says) {
				t.Fatalf("refused call: %q, want it to say %q", resultText(res), c.says)
			}
		})
	}
	a.mu.Lock()
	m := a.messages[0]
	a.mu.Unlock()
	for _, want := range []string{"mcp-gate: approve this tool call?", `Server: "honest"`, `Tool: "echo"`, "ask[0]", `"text": "call-yes"`, "hmac-sha256:"} {
		if !strings.Contains(m, want) {
			t.Errorf("the question lacks %q:\n%s", want, m)
		}
	}
	// The audit log has the ask and its answer, with the decision's id.
	outcomes := map[string]bool{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			outcomes[l["outcome"].(string)] = true
			if l["decision_id"] == "" || l["args_digest"] == "" {
				t.Errorf("approval record without its decision: %v", l)
			}
		}
	}
	for _, o := range []string{"approved", "declined", "cancelled", "error", "timeout"} {
		if !outcomes[o] {
			t.Errorf("no approval record with outcome %q (have %v)", o, outcomes)
		}
	}
}

// Issue #4: a host without form elicitation gets a refusal that says how to
// proceed, and no question.
func TestApprovalHostCannotAsk(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, askEchoPolicy))
	sess := g.connect(t, nil) // no ElicitationHandler: no elicitation capability
	res := call(t, sess, "honest__echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(resultText(res), "cannot ask for approval") || !strings.Contains(resultText(res), "policy") {
		t.Fatalf("got %q", resultText(res))
	}
}

// Issue #4: "this session" covers that tool for this session only, and is
// forgotten when the policy changes.
func TestApprovalSessionScope(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, askEchoPolicy)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	a := &asker{}
	a.set(reply("accept", map[string]any{"approve": true, "scope": "session"}))
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: a.handler})

	for i := range 3 {
		if res := call(t, sess, "honest__echo", map[string]any{"text": "x"}); res.IsError {
			t.Fatalf("call %d: %q", i, resultText(res))
		}
	}
	if n := a.asked.Load(); n != 1 {
		t.Fatalf("asked %d times for three calls after a session approval, want 1", n)
	}
	// Another tool is not covered.
	a.set(reply("decline", nil))
	if res := call(t, sess, "honest__slow", map[string]any{"steps": 1, "ms": 1}); !res.IsError {
		t.Fatal("a session approval of echo let slow through")
	}
	// A policy change forgets the approval (same rules, new revision).
	if err := os.WriteFile(pol, []byte(askEchoPolicy+"# edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", 10*time.Second, func() bool { return strings.Contains(g.stderr.String(), "policy changed") })
	before := a.asked.Load()
	if res := call(t, sess, "honest__echo", map[string]any{"text": "x"}); !res.IsError {
		t.Fatal("the session approval survived a policy change")
	}
	if a.asked.Load() != before+1 {
		t.Fatal("the human was not asked again after the policy changed")
	}
}

// Issue #4: the host cancelling a call while its question is open withdraws
// the question, and nothing reaches the upstream. Other calls keep flowing
// meanwhile.
func TestApprovalWithdrawn(t *testing.T) {
	t.Parallel()
	events := filepath.Join(t.TempDir(), "events")
	pol := writePolicy(t, "version: 1\nfallback: deny\napproval:\n  timeout: 1m\nask: [mcp:honest:slow]\nallow: [mcp:honest:echo]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest", "--events", events)}, "--policy", pol)
	a := &asker{}
	questionClosed := make(chan struct{})
	a.set(func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		close(questionClosed)
		return nil, ctx.Err()
	})
	sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: a.handler})
	toolNames(t, sess)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "honest__slow", Arguments: map[string]any{"steps": 1, "ms": 1}})
		done <- err
	}()
	waitFor(t, "the question to open", 10*time.Second, func() bool { return a.asked.Load() == 1 })
	// While the human thinks, other calls flow.
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "meanwhile"})); got != "meanwhile" {
		t.Fatalf("a call during an open question: %q", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	select {
	case <-questionClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("the host's question was not withdrawn")
	}
	time.Sleep(200 * time.Millisecond)
	if b, _ := os.ReadFile(events); strings.Contains(string(b), "slow") {
		t.Fatalf("the withdrawn call reached the upstream: %s", b)
	}
	withdrawn := false
	for _, l := range g.auditLines(t) {
		withdrawn = withdrawn || (l["event"] == "approval" && l["outcome"] == "withdrawn")
	}
	if !withdrawn {
		t.Error("no audit record of the withdrawn question")
	}
}
