package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bypasses of the team deployment (serve --http with tokens), found by
// trying one user against another through the real binary. Each test
// failed before its fix.

// teamTokens writes a token file of alice and bob and returns its path
// and their tokens.
func teamTokens(t *testing.T) (file, alice, bob string) {
	t.Helper()
	alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	file = filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(file, []byte(alice+": {sub: alice, groups: [dev]}\n"+bob+": {sub: bob, groups: [dev]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, alice, bob
}

// One user's yes to a changed tool definition (a rug pull) accepted it for
// every user: the pins are the gate's, and alice's answer moved the pin,
// so bob's call to the changed tool ran without bob ever being shown the
// change. A team user's yes is now theirs alone; the gate's pin moves by
// `mcp-gate pins accept` (or the policy's pins: allow).
func TestBypassTeamPinApprovalCoversOtherUsers(t *testing.T) {
	t.Parallel()
	u := newLazyUser(t, "alpha")
	u.firstRun(t) // the operator's run pins drifty as first seen
	u.setDef(t, "alpha", rugPull)
	file, aliceTok, bobTok := teamTokens(t)
	g := u.gate(t, "--auth-tokens", file)
	url := g.serveHTTP(t)

	alice, bob := &asker{}, &asker{}
	alice.set(reply("accept", map[string]any{"approve": true}))
	bob.set(reply("accept", map[string]any{"approve": false}))
	sa := connectHTTP(t, url, bearerClient(aliceTok), &mcp.ClientOptions{ElicitationHandler: alice.handler}, false)
	if res := call(t, sa, "alpha__drifty", map[string]any{"target": "x"}); res.IsError {
		t.Fatalf("alice's approved call to the changed tool: %s", resultText(res))
	}
	if alice.asked.Load() != 1 {
		t.Fatalf("alice was asked %d times about the changed tool; want 1", alice.asked.Load())
	}
	sb := connectHTTP(t, url, bearerClient(bobTok), &mcp.ClientOptions{ElicitationHandler: bob.handler}, false)
	res := call(t, sb, "alpha__drifty", map[string]any{"target": "x"})
	if bob.asked.Load() != 1 || !res.IsError || !strings.Contains(resultText(res), "changed since it was approved") {
		t.Fatalf("bob's call to the tool alice accepted: asked %d times, error %v: %s", bob.asked.Load(), res.IsError, resultText(res))
	}
	// Alice's yes holds for her other sessions of this gate.
	sa2 := connectHTTP(t, url, bearerClient(aliceTok), &mcp.ClientOptions{ElicitationHandler: alice.handler}, false)
	if res := call(t, sa2, "alpha__drifty", map[string]any{"target": "x"}); res.IsError || alice.asked.Load() != 1 {
		t.Fatalf("alice's second session: asked %d times in all, %s", alice.asked.Load(), resultText(res))
	}
	// The gate's pin is unmoved: the change is still pending for everyone.
	if out, _ := u.cli(t, "pins"); !strings.Contains(out, "CHANGED") {
		t.Fatalf("a team user's yes moved the gate's pin:\n%s", out)
	}
}
