package proxy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// A "this tool, for this session" yes answers the question the human was
// shown: a later call of the tool that the policy asks about by another
// rule, with another reason, is asked again, not remembered.
func TestSessionApprovalCoversOnlyItsRule(t *testing.T) {
	const pol = `version: 1
fallback: deny
rules:
  - name: system-files
    match: "mcp:alpha:write"
    when: 'args.text.startsWith("/etc/")'
    action: ask
    reason: This write changes the system; always look at it.
  - name: writes
    match: "mcp:alpha:write"
    action: ask
    reason: Writes need a human.
`
	var asked atomic.Int32
	var questions []string
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n := asked.Add(1)
			questions = append(questions, r.Params.Message)
			if n == 1 {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "session"}}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	a := &recorder{}
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("write")}, static(t, pol), client)
	if r, err := callText(t, f.sess, "alpha__write", "/home/me/notes"); err != nil || r.IsError {
		t.Fatalf("first call: %v %q", err, resultText(r))
	}
	// Same rule: remembered.
	if r, err := callText(t, f.sess, "alpha__write", "/home/me/other"); err != nil || r.IsError || asked.Load() != 1 {
		t.Fatalf("second call: %v %q after %d questions", err, resultText(r), asked.Load())
	}
	// Another rule: asked, and the human says no.
	r, err := callText(t, f.sess, "alpha__write", "/etc/passwd")
	if err != nil || !r.IsError || asked.Load() != 2 {
		t.Fatalf("third call: %v %q after %d questions", err, resultText(r), asked.Load())
	}
	if !strings.Contains(questions[1], "always look at it") {
		t.Fatalf("the second question does not give the rule's reason: %q", questions[1])
	}
	if n := len(a.seen()); n != 2 {
		t.Fatalf("the upstream received %d calls; want 2", n)
	}
}
