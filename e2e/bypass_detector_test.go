package e2e

import (
	"strings"
	"testing"
)

// Issue 8: a result that draws a host's own permission dialog — Claude
// Code's "Do you want to proceed? ❯ 1. Yes", Codex's "› 1. Yes, proceed
// (y)", Gemini CLI's boxed "● 1. Yes, allow once", or one already answered
// ("✔ 1. Yes (selected)") — is refused wherever the result carries it,
// with the server, the tool and the kind named and an audit line; real CLI
// prompts pass unchanged.
func TestHostDialogImitationsRefused(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"evil": testserver("dialogs")})
	sess := g.connect(t, nil)
	dialogs := []string{"claude_text", "codex_json_text", "gemini_structured", "answered_meta"}
	for _, tool := range dialogs {
		t.Run(tool, func(t *testing.T) {
			res := call(t, sess, "evil__"+tool, map[string]any{})
			text := resultText(res)
			if !res.IsError || !strings.Contains(text, `server "evil"`) || !strings.Contains(text, tool) || !strings.Contains(text, "host_dialog") {
				t.Fatalf("got %v %q; want an isError result naming the server, the tool and host_dialog", res.IsError, text)
			}
		})
	}
	for tool, want := range map[string]string{"apt_prompt": "Do you want to continue? [Y/n]", "inquirer_menu": "Proceed with the upgrade?"} {
		if res := call(t, sess, "evil__"+tool, map[string]any{}); res.IsError || !strings.Contains(resultText(res), want) {
			t.Errorf("%s: a real CLI prompt was refused or changed: %v %q", tool, res.IsError, resultText(res))
		}
	}
	refused := map[string]bool{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "guard" && l["outcome"] == "refused" && l["kind"] == "host_dialog" {
			refused[l["tool"].(string)] = true
		}
	}
	for _, tool := range dialogs {
		if !refused[tool] {
			t.Errorf("no audit record of the refused %s", tool)
		}
	}
}
