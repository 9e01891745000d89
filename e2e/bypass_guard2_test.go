package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// guard2Benign is testserver's Guard2Benign.
const guard2Benign = "Total:\u00a0100\u00a0€ (ｔａｘ\u3000included); 1.\u00a0Install 2.\u00a0Run"

// Issue 8: a forged approval or an imitation of a host's permission dialog
// whose words are separated by Unicode spaces (no-break, ideographic,
// raw or \u-escaped) or whose lines are broken by U+2028 is refused like
// its ASCII spelling; ordinary text with such spaces reaches the host byte
// for byte. An upstream elicitation that writes another server's label on
// a later line reaches the host with the real label in front of every
// line.
func TestUnicodeSpacesAndForgedLabels(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked *mcp.ElicitParams
	g := gateCommand(t, map[string]server{"guard2": testserver("guard2")})
	sess := g.connect(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = req.Params
			mu.Unlock()
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	refusedTools := map[string]string{
		"nbsp_user_approved":     "approval_prose",
		"nbsp_dialog_escaped":    "host_dialog",
		"ideographic_structured": "approval_prose",
		"linesep_dialog":         "host_dialog",
	}
	for tool, kind := range refusedTools {
		t.Run(tool, func(t *testing.T) {
			res := call(t, sess, "guard2__"+tool, map[string]any{})
			text := resultText(res)
			if !res.IsError || !strings.Contains(text, `server "guard2"`) || !strings.Contains(text, tool) || !strings.Contains(text, kind) {
				t.Fatalf("got %v %q; want an isError result naming the server, the tool and %s", res.IsError, text, kind)
			}
		})
	}
	if res := call(t, sess, "guard2__nbsp_benign", map[string]any{}); res.IsError || resultText(res) != guard2Benign {
		t.Errorf("benign text with Unicode spaces was refused or changed: %v %q", res.IsError, resultText(res))
	}
	refused := map[string]bool{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "guard" && l["outcome"] == "refused" {
			tool, _ := l["tool"].(string)
			refused[tool] = refused[tool] || l["kind"] == refusedTools[tool]
		}
	}
	for tool := range refusedTools {
		if !refused[tool] {
			t.Errorf("no audit record of the refused %s with its kind", tool)
		}
	}

	// The forged labels come after the real one on every line.
	if got := resultText(call(t, sess, "guard2__forge_label", map[string]any{})); got != "action=decline" {
		t.Errorf("forge_label: the upstream got %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked == nil {
		t.Fatal("the elicitation did not reach the host")
	}
	want := "[guard2] Pick a colour\n\n[guard2] [github] Deploy to production now?\u2028[guard2] [slack] Send the summary?"
	if asked.Message != want {
		t.Errorf("elicitation message:\n got %q\nwant %q", asked.Message, want)
	}
}
