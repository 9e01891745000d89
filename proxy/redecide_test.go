package proxy

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// flipPolicy asks before writes inside the workspace and denies writes
// anywhere else. The path goes through a symlink, which the condition
// resolves when it is evaluated.
func flipPolicy(ws string) string {
	return fmt.Sprintf(`version: 1
fallback: deny
approval:
  timeout: 1m
rules:
  - name: outside-workspace
    match: "mcp:alpha:write"
    when: '!path.within(args.text, %q)'
    action: deny
    reason: Writes outside the workspace are not allowed.
  - name: workspace-writes
    match: "mcp:alpha:write"
    action: ask
    reason: Writes need a human.
`, ws)
}

// A condition true when the question was asked can be false when the human
// says yes: here the symlink in the path is re-pointed out of the workspace
// while the host shows the question. The gate decides again after the
// answer and refuses, saying what changed; the upstream never sees the call.
func TestApprovalRedecidedWhenConditionFlips(t *testing.T) {
	ws, outside, link := linkedWorkspace(t)
	var asked atomic.Int32
	var message atomic.Value
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			message.Store(r.Params.Message)
			if asked.Add(1) == 1 {
				// While the human reads, the link is re-pointed.
				if err := repoint(link, outside); err != nil {
					return nil, err
				}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	a := &recorder{}
	var auditLog lockedBuffer
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("write")}, static(t, flipPolicy(ws)), client, withAudit(&auditLog))
	target := filepath.Join(link, "notes.txt")
	r, err := callText(t, f.sess, "alpha__write", target)
	if err != nil {
		t.Fatal(err)
	}
	text := resultText(r)
	if !r.IsError || !strings.Contains(text, "the decision changed while they were asked") ||
		!strings.Contains(text, "ask by rule workspace-writes") || !strings.Contains(text, "now deny by rule outside-workspace") {
		t.Fatalf("got %q", text)
	}
	if len(a.seen()) != 0 {
		t.Fatalf("the upstream received %v", a.seen())
	}
	// The human was shown the policy's own reason.
	if m, _ := message.Load().(string); !strings.Contains(m, "Why you are asked: Writes need a human. (policy rule workspace-writes)") {
		t.Fatalf("question: %q", m)
	}
	// Both decisions are in the audit log: the ask, and the deny after the yes.
	log := auditLog.String()
	if !strings.Contains(log, `"verdict":"ask"`) || !strings.Contains(log, `"verdict":"deny"`) || !strings.Contains(log, "re-decided after the user approved") {
		t.Fatalf("audit: %s", log)
	}

	// With the link pointing back into the workspace, the same approval
	// goes through: the re-decision is an ask by the rule just approved.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "sub"), link); err != nil {
		t.Fatal(err)
	}
	r, err = callText(t, f.sess, "alpha__write", target)
	if err != nil || r.IsError || len(a.seen()) != 1 {
		t.Fatalf("got %v %q; upstream saw %v", err, resultText(r), a.seen())
	}
}

// lockedBuffer collects audit lines written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func withAudit(w io.Writer) func(*Options) {
	return func(o *Options) { o.Audit = audit.New(w) }
}

// A yes covers only the rule the human was shown: when the re-decision is
// an ask by another rule (here one for writes outside the workspace, with
// its own reason), the call is refused rather than run on an answer to a
// different question.
func TestApprovalDoesNotCoverAnotherRule(t *testing.T) {
	ws, outside, link := linkedWorkspace(t)
	pol := fmt.Sprintf(`version: 1
fallback: deny
rules:
  - name: outside-workspace
    match: "mcp:alpha:write"
    when: '!path.within(args.text, %q)'
    action: ask
    reason: This write leaves the workspace.
  - name: workspace-writes
    match: "mcp:alpha:write"
    action: ask
    reason: Writes need a human.
`, ws)
	var asked atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if err := os.Remove(link); err != nil {
				return nil, err
			}
			if err := os.Symlink(outside, link); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "session"}}, nil
		},
	})
	a := &recorder{}
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("write")}, static(t, pol), client)
	r, err := callText(t, f.sess, "alpha__write", filepath.Join(link, "x"))
	if err != nil || !r.IsError || !strings.Contains(resultText(r), "ask by rule workspace-writes") || !strings.Contains(resultText(r), "now ask by rule outside-workspace") {
		t.Fatalf("got %v %q", err, resultText(r))
	}
	if len(a.seen()) != 0 || asked.Load() != 1 {
		t.Fatalf("the upstream received %v after %d questions", a.seen(), asked.Load())
	}
}

// The question's why line is the policy's own words or the gate's fixed
// text, never the decision's generated reason, which here carries the
// error of a condition that could not be evaluated on the arguments.
func TestQuestionWhyIsPolicyText(t *testing.T) {
	var message atomic.Value
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			message.Store(r.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	a := &recorder{}
	var auditLog lockedBuffer
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("write")}, static(t, `version: 1
fallback: deny
rules:
  - name: big-writes
    match: "mcp:alpha:write"
    when: int(args.text) > 3
    action: ask
`), client, withAudit(&auditLog))
	r, err := callText(t, f.sess, "alpha__write", "not-a-number")
	if err != nil || !r.IsError {
		t.Fatalf("got %v %q", err, resultText(r))
	}
	m, _ := message.Load().(string)
	var why string
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "Why you are asked: ") {
			why = l
		}
	}
	if why != "Why you are asked: the policy asks a human before this call runs (policy rule big-writes)" {
		t.Fatalf("why line %q in:\n%s", why, m)
	}
	// The detail is for the audit log and the model.
	if !strings.Contains(auditLog.String(), "its condition failed") || !strings.Contains(resultText(r), "its condition failed") {
		t.Fatalf("the detailed reason is lost: %q / %s", resultText(r), auditLog.String())
	}
}

// linkedWorkspace makes, in a directory of its own, a workspace ws
// holding link, a symlink to its subdirectory sub, and a directory outside
// it: a path through link is inside the workspace until repoint moves link
// to outside.
func linkedWorkspace(t *testing.T) (ws, outside, link string) {
	t.Helper()
	dir := t.TempDir()
	ws, outside = filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link = filepath.Join(ws, "link")
	if err := os.Symlink(filepath.Join(ws, "sub"), link); err != nil {
		t.Fatal(err)
	}
	return ws, outside, link
}

// repoint moves link to target in one rename, as a process racing the
// question would: the path never fails to resolve in between.
func repoint(link, target string) error {
	tmp := link + ".new"
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}
