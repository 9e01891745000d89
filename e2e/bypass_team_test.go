package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// A team user whose host declares no form elicitation sent their
// questions to the gate's local approval surface by the default channel
// order: the human there (whoever runs `mcp-gate approvals` as the gate's
// OS user, beside the questions of their own gates) is not that user, and
// the question did not say whose call it was. By default a team user's
// questions now never go there; where the policy names the local channel,
// the question names the user.
func TestBypassTeamQuestionsOnTheOperatorsSurface(t *testing.T) {
	t.Parallel()
	file, _, bobTok := teamTokens(t)
	teamGate := func(policyText string) (url, rt string) {
		g, rt := localGate(t, policyText)
		g.cmd.Args = append(g.cmd.Args, "--auth-tokens", file)
		return g.serveHTTP(t), rt
	}
	// The default channels: refused at once, nothing on the surface.
	url, rt := teamGate(localAskPolicy)
	bob := connectHTTP(t, url, bearerClient(bobTok), nil, false) // no elicitation
	res := callAsync(t, bob, "honest__echo", map[string]any{"text": "bob's"})
	select {
	case r := <-res:
		if !r.IsError || !strings.Contains(resultText(r), "only where the policy names that channel") {
			t.Fatalf("bob's call under the default channels: %q", resultText(r))
		}
	case <-time.After(20 * time.Second):
		out, _ := approvalsOutside(t, rt, "list")
		t.Fatalf("bob's call waits on the gate's local surface; its listing:\n%s", out)
	}

	// The policy names the local channel: the question is there, and
	// names bob.
	url, rt = teamGate("version: 1\nfallback: deny\napproval: {timeout: 30s, via: [elicitation, local]}\nask: [mcp:honest:echo]\n")
	bob = connectHTTP(t, url, bearerClient(bobTok), nil, false)
	res = callAsync(t, bob, "honest__echo", map[string]any{"text": "bob's"})
	id, listing := waitQuestion(t, rt)
	if !strings.Contains(listing, `User: "bob" (whose call this is)`) {
		t.Fatalf("the question on the local surface does not name the user:\n%s", listing)
	}
	if out, code := approvalsOutside(t, rt, "approve", id); code != 0 {
		t.Fatalf("approve from outside: exit %d: %s", code, out)
	}
	if r := awaitResult(t, res); r.IsError || !strings.Contains(resultText(r), "bob's") {
		t.Fatalf("bob's approved call: %q", resultText(r))
	}
}

// An OIDC token's email was read whatever its email_verified said: a user
// who put the admin's address in their profile at the issuer (unverified)
// passed a policy granting by user.email. An unverified email is dropped
// now; the token still authenticates its sub.
func TestBypassTeamUnverifiedEmail(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	k := newSigningKey(t, "k1")
	iss.publish(k)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, `version: 1
fallback: deny
rules:
  - name: admin-echo
    match: [mcp:honest:echo]
    when: 'user.email == "admin@example.com"'
    action: allow
`), "--oidc-issuer", iss.srv.URL, "--oidc-audience", audience)
	url := g.serveHTTP(t)
	noRoots := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	admin := iss.token(t, k, map[string]any{"sub": "admin", "aud": audience, "email": "admin@example.com", "email_verified": true})
	if res := call(t, connectHTTP(t, url, bearerClient(admin), noRoots, false), "honest__echo", map[string]any{"text": "hi"}); res.IsError {
		t.Fatalf("the admin (verified email): %q", resultText(res))
	}
	mallory := iss.token(t, k, map[string]any{"sub": "mallory", "aud": audience, "email": "admin@example.com", "email_verified": false})
	if res := call(t, connectHTTP(t, url, bearerClient(mallory), noRoots, false), "honest__echo", map[string]any{"text": "hi"}); !res.IsError || !strings.Contains(resultText(res), "fallback") {
		t.Fatalf("mallory, with the admin's email unverified: %q; want refused by the fallback", resultText(res))
	}
}

// The catalog cache was one per gate: what alice's child listed (a tool it
// added for her, and so any description, resource name or instructions of
// her child's) was written to the entry bob's first session was seeded
// from, and reached bob's host before any child of his ran. A team user's
// entries are their own now.
func TestBypassTeamCatalogCacheAcrossUsers(t *testing.T) {
	t.Parallel()
	file, aliceTok, bobTok := teamTokens(t)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--auth-tokens", file)
	url := g.serveHTTP(t)
	noRoots := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	sa := connectHTTP(t, url, bearerClient(aliceTok), noRoots, false)
	toolNames(t, sa)
	if res := call(t, sa, "honest__toggle", nil); res.IsError {
		t.Fatalf("alice's toggle: %s", resultText(res))
	}
	waitFor(t, "alice's child to list its new tool", 20*time.Second, func() bool {
		_, ok := toolNames(t, sa)["honest__extra"]
		return ok
	})
	// The entry is written off the fetch's path: give it time to land.
	cache := filepath.Join(g.dir, "cache", "mcp-gate", "catalog")
	waitFor(t, "the cache entry of alice's listing", 20*time.Second, func() bool {
		entries, _ := os.ReadDir(cache)
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(cache, e.Name())); err == nil && strings.Contains(string(b), `"extra"`) {
				return true
			}
		}
		return false
	})
	sb := connectHTTP(t, url, bearerClient(bobTok), noRoots, false)
	if _, ok := toolNames(t, sb)["honest__extra"]; ok {
		t.Fatal("bob's first list shows the tool alice's child added for her")
	}
}

// --max-sessions-per-user held 2025-11-25 sessions only: a 2026-07-28
// request is a session of its own for its duration, and one user (or one
// stolen token) could hold any number of them at once, past the bound
// meant to keep them from taking every session. Such requests in flight
// now count against the per-user and total bounds.
func TestBypassTeamSessionBoundByModernRequests(t *testing.T) {
	t.Parallel()
	file, aliceTok, bobTok := teamTokens(t)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--auth-tokens", file, "--max-sessions-per-user", "2")
	url := g.serveHTTP(t)
	body := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"honest__slow","arguments":{"steps":1,"ms":60000},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id)
	}
	modern := func(tok string, id int) map[string]string {
		h := modernHeaders("tools/call", "honest__slow")
		h["Authorization"] = "Bearer " + tok
		return h
	}
	// Two of alice's slow calls in flight: her bound.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for id := range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body(id)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range modern(aliceTok, id) {
				req.Header.Set(k, v)
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	waitFor(t, "alice's two calls to be decided", 30*time.Second, func() bool {
		n := 0
		for _, l := range g.auditLines(t) {
			if l["event"] == "decision" && l["tool"] == "slow" {
				n++
			}
		}
		return n == 2
	})
	resp, b := post(t, url, modern(aliceTok, 9), body(9))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "limit of 2 sessions per user") {
		t.Fatalf("alice's third request in flight: %d %s; want 503 at her bound", resp.StatusCode, b)
	}
	if resp, b := post(t, url, map[string]string{"Authorization": "Bearer " + aliceTok}, initBody); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a 2025 session for alice beside her two requests: %d %s; want 503", resp.StatusCode, b)
	}
	// Bob is not held back by alice.
	if resp, b := post(t, url, map[string]string{"Authorization": "Bearer " + bobTok}, initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's session: %d %s", resp.StatusCode, b)
	}
}

// `mcp-gate approvals watch` took a "y" typed for one question as the
// answer to the next: when the question on screen closed (its call
// withdrawn, which whoever asked can time), the next was printed in its
// place at once, and the keystroke on its way approved a call the human
// never read. An answer that comes as its question appears is not taken.
func TestBypassWatchAnswerLandsOnTheNextQuestion(t *testing.T) {
	// Not parallel (see harness_test.go): types into watch's terminal.
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) from util-linux is needed to give watch a terminal")
	}
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil) // no elicitation: the questions go to the surface
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	resA := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := sess.CallTool(ctxA, &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "harmless-first"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true}
		}
		resA <- res
	}()
	waitQuestion(t, rt)
	resB := callAsync(t, sess, "honest__echo", map[string]any{"text": "never-read-second"})
	waitFor(t, "both questions on the surface", 30*time.Second, func() bool {
		out, _ := approvalsOutside(t, rt, "list")
		return strings.Contains(out, "never-read-second")
	})

	dir := t.TempDir()
	// Its output goes to files only: setsid's caller waits for the pipes
	// to close, and this script runs until the test says go, or its
	// directory is gone. A test that fails before go kills it (and the
	// script(1) and watch under it) by its process group, which setsid
	// made its own: left running, it polled for good.
	const script = `exec >/dev/null 2>&1
while [ "$(cat /proc/$(cut -d' ' -f4 /proc/$$/stat)/comm)" = setsid ]; do sleep 0.01; done
echo $$ >"$D/pid"
(while [ ! -e "$D/go" ]; do [ -d "$D" ] || exit; sleep 0.005; done; printf 'y\n'; sleep 3) | script -qfec "$W approvals watch" "$D/typescript" >"$D/out" 2>&1; echo done >"$D/rc"`
	cmd := exec.Command("setsid", "-f", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "D="+dir, "W="+gateBin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setsid: %v: %s", err, out)
	}
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = signalPID(-pid, syscall.SIGKILL)
		}
	})
	screen := func() string { b, _ := os.ReadFile(filepath.Join(dir, "typescript")); return string(b) }
	waitFor(t, "watch to show the first question", 30*time.Second, func() bool { return strings.Contains(screen(), "harmless-first") })
	// The human reads the first question and types y; as they do, the
	// first call is withdrawn.
	cancelA()
	waitFor(t, "watch to show the second question in its place", 30*time.Second, func() bool {
		return strings.Contains(screen(), "(that question closed") && strings.Contains(screen(), "never-read-second")
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-resA
	select {
	case r := <-resB:
		t.Fatalf("the second call ran on the y typed for the first (%q)\nwatch's terminal:\n%s", resultText(r), screen())
	case <-time.After(3 * time.Second):
	}
	waitFor(t, "watch to say it ignored the answer", 20*time.Second, func() bool { return strings.Contains(screen(), "ignored: that answer came as this question appeared") })
	id, _ := waitQuestion(t, rt)
	if out, code := approvalsOutside(t, rt, "deny", id); code != 0 {
		t.Fatalf("deny the second: exit %d: %s", code, out)
	}
	if r := awaitResult(t, resB); !r.IsError {
		t.Fatalf("the second call after its denial: %q", resultText(r))
	}
}

// The approvals web page moved the question below up into the place of
// one that closed, and a click meant for the first (its call withdrawn as
// the human clicked, which whoever asked can time) approved the second,
// which the human never read. The page takes a click only once no box has
// left the list for a moment.
func TestBypassWebClickLandsOnTheNextQuestion(t *testing.T) {
	// Not parallel (see harness_test.go): headless Chromium is heavy on both CPUs.
	ctx := browser(t)
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil)
	url, _ := startWebOutside(t, rt)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	resA := make(chan struct{})
	go func() {
		defer close(resA)
		_, _ = sess.CallTool(ctxA, &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "harmless-first"}})
	}()
	boxes := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".q").length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "the first question on the page", 30*time.Second, func() bool { return boxes() == 1 })
	resB := callAsync(t, sess, "honest__echo", map[string]any{"text": "never-read-second"})
	waitFor(t, "both questions on the page", 30*time.Second, func() bool { return boxes() == 2 })
	cancelA()
	<-resA
	waitFor(t, "the second question to move up", 30*time.Second, func() bool { return boxes() == 1 })
	// The click the human aimed at the first question's button.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.q button.approve`))); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-resB:
		t.Fatalf("the second call ran on the click meant for the first (%q)", resultText(r))
	case <-time.After(3 * time.Second):
	}
	said, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`.q p.result`)))
	if err != nil || !strings.Contains(said, "not answered: the list changed just now") {
		t.Fatalf("the page's word on the early click: %q %v", said, err)
	}
	id, _ := waitQuestion(t, rt)
	if out, code := approvalsOutside(t, rt, "deny", id); code != 0 {
		t.Fatalf("deny the second: exit %d: %s", code, out)
	}
	if r := awaitResult(t, resB); !r.IsError {
		t.Fatalf("the second call after its denial: %q", resultText(r))
	}
}

// Team gate: the result guard's lines of a team user's call named no
// user (README promises decision, approval, guard and elicitation lines
// all name the user the session acts for): the records were written
// through the gate's own logger, not the session's, so a security team
// could not tell whose call met a forged approval. They name the user
// now.
func TestBypassTeamGuardLinesNameTheUser(t *testing.T) {
	t.Parallel()
	file, aliceTok, _ := teamTokens(t)
	g := gateCommand(t, map[string]server{"evil": testserver("hostile")}, "--auth-tokens", file)
	url := g.serveHTTP(t)
	sa := connectHTTP(t, url, bearerClient(aliceTok), nil, false)
	if res := call(t, sa, "evil__forge_text", map[string]any{}); !res.IsError {
		t.Fatalf("a forged approval passed: %s", resultText(res))
	}
	var guards int
	for _, l := range g.auditLines(t) {
		if l["event"] != "guard" || l["tool"] != "forge_text" {
			continue
		}
		guards++
		if l["user"] != "alice" {
			t.Errorf("a guard line of alice's call names user %q: %v", l["user"], l)
		}
	}
	if guards == 0 {
		t.Fatal("no guard line of alice's refused call")
	}
}
