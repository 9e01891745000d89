package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 13: a human reachable where the host cannot ask. The test process
// plays the host: it starts the gate (its child) and connects without
// elicitation; the human answers with `mcp-gate approvals` from outside the
// host's ancestry and login session.

// localGate prepares a gate with the local approval surface on, its socket
// in a runtime directory of the test's own.
func localGate(t *testing.T, policyText string) (*gate, string) {
	t.Helper()
	rt := runtimeDir(t)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", writePolicy(t, policyText), "--local-approvals")
	g.cmd.Env = append(g.cmd.Env, "XDG_RUNTIME_DIR="+rt)
	return g, rt
}

// runtimeDir is a short 0700 directory of the test's own for the sockets
// (a unix socket's path is at most 107 bytes; t.TempDir's can be longer).
func runtimeDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// approvalsChild runs `mcp-gate approvals ARGS` as a child of the test: as
// the model's shell would, a descendant of the host. setsid puts it in a
// session of its own, so that only the ancestry check can refuse it.
func approvalsChild(t *testing.T, rt string, setsid bool, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(gateBin, append([]string{"approvals"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
	if setsid {
		inNewSession(t, cmd)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// approvalsOutside runs `mcp-gate approvals ARGS` from outside the host's
// ancestry and session, as a human in another terminal: setsid -f forks it
// into a new session and exits, and the command waits until it has been
// handed to init (or the nearest subreaper), so that the test is no longer
// its ancestor.
func approvalsOutside(t *testing.T, rt string, args ...string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	const script = `while [ "$(cat /proc/$(cut -d' ' -f4 /proc/$$/stat)/comm)" = setsid ]; do sleep 0.01; done
"$@" >"$D/out" 2>&1; echo $? >"$D/rc.tmp"; mv "$D/rc.tmp" "$D/rc"`
	cmd := exec.Command("setsid", "-f", "sh", "-c", script, "sh", gateBin, "approvals")
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "D="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setsid: %v: %s", err, out)
	}
	var rc []byte
	waitFor(t, "mcp-gate approvals "+strings.Join(args, " "), 20*time.Second, func() bool {
		var err error
		rc, err = os.ReadFile(filepath.Join(dir, "rc"))
		return err == nil
	})
	out, _ := os.ReadFile(filepath.Join(dir, "out"))
	code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
	return string(out), code
}

var questionID = regexp.MustCompile(`(?m)^([0-9a-f]{32})  \(`)

// waitQuestion lists from outside until one question is open, and returns
// its id and the listing.
func waitQuestion(t *testing.T, rt string) (string, string) {
	t.Helper()
	var id, out string
	waitFor(t, "the question on the local surface", 30*time.Second, func() bool {
		var code int
		out, code = approvalsOutside(t, rt, "list")
		if code != 0 {
			t.Fatalf("approvals list from outside the host failed (%d): %s", code, out)
		}
		m := questionID.FindStringSubmatch(out)
		if m != nil {
			id = m[1]
		}
		return m != nil
	})
	return id, out
}

// callAsync calls a tool and delivers its result.
func callAsync(t *testing.T, sess *mcp.ClientSession, name string, args any) <-chan *mcp.CallToolResult {
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "transport error: " + err.Error()}}}
		}
		ch <- res
	}()
	return ch
}

func awaitResult(t *testing.T, ch <-chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not end")
		return nil
	}
}

const localAskPolicy = `version: 1
fallback: deny
approval:
  timeout: 30s
ask:
  - mcp:honest:echo
`

// The call waits; the approve command run by the host's descendants (in
// its session, or in a session of its own) is refused and sees no id; the
// same command from outside runs the call.
func TestLocalApprovalApproveFromOutsideOnly(t *testing.T) {
	t.Parallel()
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil) // no elicitation
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "local-yes"})
	id, listing := waitQuestion(t, rt)
	for _, want := range []string{"mcp-gate: approve this tool call?", `Server: "honest"`, `Tool: "echo"`, `"text": "local-yes"`, "hmac-sha256:", `host "e2e-host"`} {
		if !strings.Contains(listing, want) {
			t.Errorf("the listing lacks %q:\n%s", want, listing)
		}
	}
	// The model's shell: a child of the host, in its session. Where the
	// test's session id reads as 0 (its leader lives outside this pid
	// namespace, as in some CI containers) the gate cannot use the session
	// check, and the ancestry check must refuse the child instead.
	why := "login session of the host"
	if ownSessionID(t) == 0 {
		why = "descends from the host"
	}
	for _, args := range [][]string{{"approve", id}, {"list"}, {"deny", id}} {
		out, code := approvalsChild(t, rt, false, args...)
		if code == 0 || !strings.Contains(out, why) || strings.Contains(out, id) && args[0] == "list" {
			t.Fatalf("approvals %v from the host's child: exit %d: %s", args, code, out)
		}
	}
	// A child that started a session of its own still descends from it.
	out, code := approvalsChild(t, rt, true, "approve", id)
	if code == 0 || !strings.Contains(out, "descends from the host") {
		t.Fatalf("approve from the host's setsid child: exit %d: %s", code, out)
	}
	select {
	case r := <-res:
		t.Fatalf("the call ended before the human answered: %q", resultText(r))
	default:
	}
	out, code = approvalsOutside(t, rt, "approve", id)
	if code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("approve from outside: exit %d: %s", code, out)
	}
	r := awaitResult(t, res)
	if r.IsError || !strings.Contains(resultText(r), "local-yes") {
		t.Fatalf("approved call: %q", resultText(r))
	}
	// The same id cannot answer again, and nothing the host reads names it.
	if out, code := approvalsOutside(t, rt, "approve", id); code == 0 {
		t.Fatalf("a closed question was approved again: %s", out)
	}
	if strings.Contains(g.stderr.String(), id) {
		t.Error("the gate's stderr, which the host reads, names the question's id")
	}
	outcomes := map[string]bool{}
	for _, l := range g.auditLines(t) {
		if l["event"] == "approval" {
			outcomes[l["outcome"].(string)] = true
		}
	}
	if !outcomes["approved"] {
		t.Errorf("no approved record in the audit: %v", outcomes)
	}
}

// Deny refuses; the refusal the model reads carries neither the id nor the
// command that answers.
func TestLocalApprovalDeny(t *testing.T) {
	t.Parallel()
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil)
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "local-no"})
	id, _ := waitQuestion(t, rt)
	if out, code := approvalsOutside(t, rt, "deny", id); code != 0 {
		t.Fatalf("deny: exit %d: %s", code, out)
	}
	r := awaitResult(t, res)
	txt := resultText(r)
	if !r.IsError || !strings.Contains(txt, "answered no on the local approval surface") {
		t.Fatalf("denied call: %q", txt)
	}
	if strings.Contains(txt, id) || strings.Contains(txt, "mcp-gate approvals") {
		t.Fatalf("the refusal tells the model how to answer: %q", txt)
	}
}

// Nobody answers: refused at the approval timeout.
func TestLocalApprovalTimeout(t *testing.T) {
	t.Parallel()
	g, rt := localGate(t, strings.Replace(localAskPolicy, "30s", "2s", 1))
	sess := g.connect(t, nil)
	start := time.Now()
	r := call(t, sess, "honest__echo", map[string]any{"text": "nobody"})
	if !r.IsError || !strings.Contains(resultText(r), "no answer within 2s on the local approval surface") {
		t.Fatalf("unanswered call: %q", resultText(r))
	}
	if time.Since(start) < 2*time.Second {
		t.Fatal("the call was refused before the timeout")
	}
	if out, _ := approvalsOutside(t, rt, "list"); questionID.MatchString(out) {
		t.Fatalf("the question is still listed after its timeout: %s", out)
	}
}

// A yes given after the policy changed to deny is refused (decided again).
func TestLocalApprovalRecheckedAgainstNewPolicy(t *testing.T) {
	t.Parallel()
	rt := runtimeDir(t)
	pol := writePolicy(t, localAskPolicy)
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol, "--local-approvals")
	g.cmd.Env = append(g.cmd.Env, "XDG_RUNTIME_DIR="+rt)
	sess := g.connect(t, nil)
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "changed"})
	id, _ := waitQuestion(t, rt)
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: deny\ndeny:\n  - mcp:honest:echo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload", 10*time.Second, func() bool { return strings.Contains(g.stderr.String(), "policy changed") })
	if out, code := approvalsOutside(t, rt, "approve", id); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, out)
	}
	r := awaitResult(t, res)
	if !r.IsError || !strings.Contains(resultText(r), "the policy changed while they were asked") {
		t.Fatalf("approved under a changed policy: %q", resultText(r))
	}
}

// Policy chooses the channels: a host that can elicit is asked on the
// local surface when approval.hosts says so, and the elicitation-only
// channel refuses a host that cannot ask without waiting.
func TestLocalApprovalViaPolicy(t *testing.T) {
	t.Parallel()
	t.Run("hosts entry sends an eliciting host to local", func(t *testing.T) {
		g, rt := localGate(t, strings.Replace(localAskPolicy, "  timeout: 30s\n", "  timeout: 30s\n  hosts:\n    e2e-host: {via: [local]}\n", 1))
		a := &asker{}
		a.set(reply("accept", map[string]any{"approve": true}))
		sess := g.connect(t, &mcp.ClientOptions{ElicitationHandler: a.handler})
		res := callAsync(t, sess, "honest__echo", map[string]any{"text": "via-local"})
		id, _ := waitQuestion(t, rt)
		if out, code := approvalsOutside(t, rt, "approve", "--session", id); code != 0 {
			t.Fatalf("approve: exit %d: %s", code, out)
		}
		if r := awaitResult(t, res); r.IsError {
			t.Fatalf("call: %q", resultText(r))
		}
		if n := a.asked.Load(); n != 0 {
			t.Fatalf("the host was asked %d times; the policy sent this host's questions to the local surface", n)
		}
		// The session approval covers the next call.
		if r := call(t, sess, "honest__echo", map[string]any{"text": "again"}); r.IsError {
			t.Fatalf("second call after a session approval: %q", resultText(r))
		}
	})
	t.Run("elicitation only refuses a host that cannot ask", func(t *testing.T) {
		g, _ := localGate(t, strings.Replace(localAskPolicy, "  timeout: 30s\n", "  timeout: 30s\n  via: [elicitation]\n", 1))
		sess := g.connect(t, nil)
		start := time.Now()
		r := call(t, sess, "honest__echo", map[string]any{"text": "x"})
		if !r.IsError || !strings.Contains(resultText(r), "cannot ask for approval") || time.Since(start) > 20*time.Second {
			t.Fatalf("got %q after %s", resultText(r), time.Since(start))
		}
	})
	t.Run("a rule's via wins", func(t *testing.T) {
		g, rt := localGate(t, "version: 1\nfallback: deny\napproval:\n  via: [elicitation]\nrules:\n  - match: mcp:honest:echo\n    action: ask\n    via: [local]\n")
		sess := g.connect(t, nil)
		res := callAsync(t, sess, "honest__echo", map[string]any{"text": "rule-local"})
		id, _ := waitQuestion(t, rt)
		if out, code := approvalsOutside(t, rt, "approve", id); code != 0 {
			t.Fatalf("approve: exit %d: %s", code, out)
		}
		if r := awaitResult(t, res); r.IsError {
			t.Fatalf("call: %q", resultText(r))
		}
	})
}

// watch prompts in a terminal (script(1) gives it one) and a "y" there
// runs the waiting call; without a terminal it refuses to start.
func TestLocalApprovalWatch(t *testing.T) {
	// Not parallel (see harness_test.go): types into watch's terminal at fixed times.
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) from util-linux is needed to give watch a terminal")
	}
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil)
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "watched"})
	waitQuestion(t, rt)
	// No terminal: refused.
	if out, code := approvalsOutside(t, rt, "watch"); code == 0 || !strings.Contains(out, "from a terminal") {
		t.Fatalf("watch without a terminal: exit %d: %s", code, out)
	}
	dir := t.TempDir()
	const script = `while [ "$(cat /proc/$(cut -d' ' -f4 /proc/$$/stat)/comm)" = setsid ]; do sleep 0.01; done
(sleep 2; printf 'y\n'; sleep 3) | script -qfec "$W approvals watch" "$D/typescript" >"$D/out" 2>&1; echo done >"$D/rc"`
	cmd := exec.Command("setsid", "-f", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "D="+dir, "W="+gateBin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setsid: %v: %s", err, out)
	}
	r := awaitResult(t, res)
	if r.IsError || !strings.Contains(resultText(r), "watched") {
		typescript, _ := os.ReadFile(filepath.Join(dir, "typescript"))
		t.Fatalf("call after y in watch: %q\nwatch's terminal:\n%s", resultText(r), typescript)
	}
	waitFor(t, "watch to end", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "rc"))
		return err == nil
	})
	typescript, _ := os.ReadFile(filepath.Join(dir, "typescript"))
	for _, want := range []string{"watching for questions", `"text": "watched"`, "approve? y = this call"} {
		if !strings.Contains(string(typescript), want) {
			t.Errorf("watch's terminal lacks %q:\n%s", want, typescript)
		}
	}
}

// A host that starts the gate through a wrapper (sh -c, npx) is protected
// too: the model's process descends from the host, not from the wrapper,
// and a setsid of its own does not get it out.
func TestLocalApprovalHostBehindWrapper(t *testing.T) {
	t.Parallel()
	g, rt := localGate(t, localAskPolicy)
	g.cmd.Args = append([]string{"sh", "-c", `"$0" "$@"; exit $?`, gateBin}, g.cmd.Args[1:]...)
	g.cmd.Path = "/bin/sh"
	sess := g.connect(t, nil)
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "wrapped"})
	id, _ := waitQuestion(t, rt)
	out, code := approvalsChild(t, rt, true, "approve", id)
	if code == 0 || !strings.Contains(out, "descends from the host") {
		t.Fatalf("approve from the host's setsid child, gate behind a wrapper: exit %d: %s", code, out)
	}
	if out, code := approvalsOutside(t, rt, "approve", id); code != 0 {
		t.Fatalf("approve from outside: exit %d: %s", code, out)
	}
	if r := awaitResult(t, res); r.IsError {
		t.Fatalf("call: %q", resultText(r))
	}
}

// ownSessionID is the test process's session id as /proc shows it: 0 when
// the session's leader is not in this pid namespace.
func ownSessionID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	// The command name is in parentheses and may hold spaces; the fields
	// after it are: state ppid pgrp session.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	sid, err := strconv.Atoi(f[3])
	if err != nil {
		t.Fatalf("session id in /proc/self/stat: %v", err)
	}
	return sid
}
