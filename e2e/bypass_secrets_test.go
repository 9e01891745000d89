package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// leakingEnv is one variable of every class a secret-name denylist let
// through to the servers, plus classic names it did catch. None may reach
// a server that did not ask for it.
var leakingEnv = []string{
	"SLACK_WEBHOOK_URL=https://hooks.slack.invalid/services/T0/B0/XXXX",
	"DATABASE_URL=postgres://app:hunter2@db.invalid/app",
	"SENTRY_DSN=https://abc123@o1.ingest.invalid/1",
	"ID_JWT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
	"AUTHORIZATION=Bearer abc",
	"KUBECONFIG=/home/me/.kube/config",
	"MYSECRETTHING=x",
	"AWS_PROFILE=prod",
	"AWS_ACCESS_KEY_ID=AKIAEXAMPLE",
	"GOOGLE_APPLICATION_CREDENTIALS=/home/me/sa.json",
	"NPM_TOKEN=npm_x",
	"GITHUB_TOKEN=ghp_x",
	"HTTPS_PROXY=http://user:pw@proxy.invalid:3128",
}

// envNames starts the gate with extra variables in its environment and
// returns the names the secrets test server saw.
func envNames(t *testing.T, entry server, extra ...string) []string {
	t.Helper()
	g := gateCommand(t, map[string]server{"sec": entry})
	g.cmd.Env = append(withoutProxies(g.cmd.Env), extra...)
	sess := g.connect(t, nil)
	names := strings.Split(resultText(call(t, sess, "sec__env", map[string]any{})), "\n")
	// A proxy variable with credentials is withheld with a log line that
	// names it and never shows its value.
	waitStderr(g.stderr, "variable=HTTPS_PROXY", 1)
	logs := g.stderr.String()
	if !strings.Contains(logs, "variable=HTTPS_PROXY") || strings.Contains(logs, "user:pw") {
		t.Errorf("want a log line naming HTTPS_PROXY without its value:\n%s", logs)
	}
	return names
}

// withoutProxies drops the test runner's own proxy variables, so the test
// decides what the gate sees.
func withoutProxies(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return strings.HasSuffix(strings.ToUpper(name), "_PROXY")
	})
}

func TestSecretsNeverReachServers(t *testing.T) {
	t.Parallel()
	names := envNames(t, testserver("secrets"), append(slices.Clone(leakingEnv), "NO_PROXY=localhost", "LC_TIME=C", "XDG_DATA_HOME=/x")...)
	for _, kv := range leakingEnv {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(names, name) {
			t.Errorf("%s reached the server", name)
		}
	}
	for _, want := range []string{"PATH", "HOME", "NO_PROXY", "LC_TIME", "XDG_DATA_HOME"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s did not reach the server; it got %q", want, names)
		}
	}
	for _, n := range names {
		if n == "MCP_GATE_NESTED_IN" {
			continue // set by the gate itself (issue 10: self-nesting), not taken from its environment
		}
		if n != "PATH" && n != "HOME" && n != "NO_PROXY" && n != "LC_TIME" && n != "XDG_DATA_HOME" &&
			!slices.Contains([]string{"USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "TERM", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}, n) &&
			!strings.HasPrefix(n, "LC_") && !strings.HasPrefix(n, "XDG_") {
			t.Errorf("%s reached the server, which is not on the allowlist", n)
		}
	}
}

func TestInheritEnv(t *testing.T) {
	t.Parallel()
	t.Run("globs and names", func(t *testing.T) {
		names := envNamesInherit(t, testserver("secrets"), `["AWS_*", "KUBECONFIG"]`)
		for _, want := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "KUBECONFIG", "PATH"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s did not reach the server; it got %q", want, names)
			}
		}
		for _, not := range []string{"DATABASE_URL", "GITHUB_TOKEN", "NPM_TOKEN", "MYSECRETTHING"} {
			if slices.Contains(names, not) {
				t.Errorf("%s reached the server", not)
			}
		}
	})
	t.Run("true", func(t *testing.T) {
		names := envNamesInherit(t, testserver("secrets"), `true`)
		for _, kv := range leakingEnv {
			name, _, _ := strings.Cut(kv, "=")
			if !slices.Contains(names, name) {
				t.Errorf("inheritEnv true: %s did not reach the server", name)
			}
		}
	})
}

// envNamesInherit is envNames for an entry with an inheritEnv value, which
// the harness's server type does not carry: the servers file is rewritten.
func envNamesInherit(t *testing.T, entry server, inherit string) []string {
	t.Helper()
	g := gateCommand(t, map[string]server{"sec": entry})
	servers := g.cmd.Args[slices.Index(g.cmd.Args, "--servers")+1]
	data, err := os.ReadFile(servers)
	if err != nil {
		t.Fatal(err)
	}
	patched := strings.Replace(string(data), `"command":`, `"inheritEnv": `+inherit+`, "command":`, 1)
	if patched == string(data) {
		t.Fatalf("could not add inheritEnv to %s", data)
	}
	if err := os.WriteFile(servers, []byte(patched), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Env = append(withoutProxies(g.cmd.Env), leakingEnv...)
	sess := g.connect(t, nil)
	names := strings.Split(resultText(call(t, sess, "sec__env", map[string]any{})), "\n")
	if inherit == "true" && !waitStderr(g.stderr, `inherits the gate's whole environment`, 1) {
		t.Errorf("no warning for inheritEnv true:\n%s", g.stderr.String())
	}
	return names
}

// Issue 8: no log or audit line carries the bytes of a message, an
// argument or a result, malformed ones included. Every line a host or a
// hostile upstream sends here carries a canary; the gate runs at debug
// level with an audit log, and neither stream may contain it.
func TestNoMessageBytesInLogs(t *testing.T) {
	t.Parallel()
	const canary = "CANARYq8Zx3v"
	const num = "73194628105537" // for number literals, which cannot hold letters
	leaky := testserver("leaky")
	leaky.Env = map[string]string{"CANARY": canary, "CANARY_NUM": num}
	// A condition that fails on the canary: its error quotes the argument.
	pol := writePolicy(t, `version: 1
fallback: deny
allow: ["mcp:leak:*"]
rules:
  - name: no-escape
    match: mcp:leak:echo
    when: '!path.within(args.p, "/tmp")'
    action: deny
`)
	g := gateCommand(t, map[string]server{"leak": leaky}, "--max-message-bytes", "65536", "--policy", pol)
	h := startRaw(t, g)
	// A host that can be asked, so that the upstream's imitation of the
	// gate's prompt reaches the guard.
	h.send("0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"raw","version":"1"}}}`)
	h.send("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// From the host: lines that are not messages, broken messages, odd
	// ids and methods, arguments the gate decides on and refuses.
	for _, l := range []string{
		canary + " not JSON",
		`{"jsonrpc":"2.0","method":"` + canary,
		`{"jsonrpc":"` + canary + `","id":100,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":{"` + canary + `":1},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":"` + canary + `"}`,
		`{"jsonrpc":"2.0","id":"` + canary + `","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/` + canary + `"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + canary + `"}}`,
		`{"jsonrpc":"2.0","id":"m-` + canary + `","method":"` + canary + `/x","params":{}}`,
		`{"jsonrpc":"2.0","id":102,"method":"tools/call","params":{"name":"leak__echo","arguments":{"x":"` + canary + `","x":"` + canary + `2"}}}`,
		`{"jsonrpc":"2.0","id":103,"method":"tools/call","params":{"name":"leak__echo","arguments":{"` + canary + `":1,"` + strings.ToLower(canary) + `":2}}}`,
		`{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{"name":"leak__echo","arguments":{"n":` + num + `e99999}}}`,
		`{"jsonrpc":"2.0","id":105,"method":"tools/call","params":{"name":"leak__echo","arguments":"` + canary + `"}}`,
		`{"jsonrpc":"2.0","id":106,"method":"tools/call","params":{"name":"leak__echo","arguments":{"x":"` + canary + strings.Repeat("z", 70<<10) + canary + `"}}}`,
		`{"jsonrpc":"2.0","id":110,"method":"tools/call","params":{"name":"leak__echo","arguments":{"p":"` + canary + `/rel"}}}`,
		`{"jsonrpc":"2.0","id":111,"method":"tools/call","params":{"name":"leak__echo","arguments":{"p":"/tmp/x","n":` + num + `e99999}}}`,
		`{"jsonrpc":"2.0","id":107,"method":"resources/read","params":{"uri":1` + num + `}}`,
		`{"jsonrpc":"2.0","id":108,"method":"prompts/get","params":{"name":"p","arguments":{"a":"` + canary + `"}}}`,
		`{"jsonrpc":"2.0","id":109,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"` + canary + `"}}}`,
	} {
		h.send("", l)
	}
	// From the upstream: garbage, broken and oversized responses.
	for i, tool := range []string{"garbage", "badversion", "badid", "cut", "badnumber", "baderror", "badresult", "huge", "forge", "impersonate", "echo"} {
		id := fmt.Sprint(200 + i)
		h.send(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"leak__`+tool+`","arguments":{"a":"`+canary+`"}}}`)
	}
	h.send("300", `{"jsonrpc":"2.0","id":300,"method":"ping"}`)

	waitStderr(g.stderr, "bad message", 1)
	logs := g.stderr.String()
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "bad message") || !strings.Contains(string(data), `"event":"decision"`) ||
		!strings.Contains(string(data), `"rule":"no-escape"`) || !strings.Contains(string(data), `"event":"guard"`) || !strings.Contains(string(data), `"event":"elicitation"`) {
		t.Fatalf("the gate logged no bad message or audited no decision: the test proves nothing\n%s", logs)
	}
	assertEveryAuditLineHasEvent(t, g, "policy_load", "decision", "guard", "elicitation")
	for _, c := range []string{canary, strings.ToLower(canary), num} {
		for _, stream := range []struct{ name, text string }{{"stderr", logs}, {"audit log", string(data)}} {
			for _, line := range strings.Split(stream.text, "\n") {
				// The upstream's own stderr is its log, shown at debug
				// level as it is (README); this upstream writes none.
				if strings.Contains(line, c) {
					t.Errorf("the %s carries message bytes (%s): %s", stream.name, c, line)
				}
			}
		}
	}
}

// Issue 8: the gate's own audit log beside the policy, written at every
// call, kept every reload from happening: an emergency deny never applied
// while calls kept coming. Here a host calls without a pause, the audit log
// sits beside the policy, and an in-place edit to deny must apply within
// the watcher's own latency (policyReloadLatency), with slack for a busy
// machine.
//
// The time is measured from the edit to the gate's policy_reload audit
// record, not to the host's first denied call: the calls in flight around
// the swap are the host's and the machine's time, not the watcher's. The
// slack (10x the designed 500 ms) cannot hide the regression this test is
// for: a watcher that lets the neighbour's events postpone the reload
// never reloads while the host keeps calling (the calls go on until the
// deny shows or the 30 s hang bound), however long it is given.
func TestEmergencyDenyBesideBusyAuditLog(t *testing.T) {
	// Not parallel (see harness_test.go): bounds the policy reload's latency in wall-clock time.
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: deny\nallow: [mcp:honest:echo]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gateCommand(t, map[string]server{"honest": testserver("honest")},
		"--policy", pol, "--audit-log", filepath.Join(dir, "audit.jsonl"))
	g.audit = filepath.Join(dir, "audit.jsonl")
	sess := g.connect(t, nil)
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "a"})); got != "a" {
		t.Fatalf("before the edit: %q", got)
	}
	stop := make(chan struct{})
	denied := make(chan struct{})
	busy := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			res, err := sess.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "a"}})
			if err != nil {
				t.Errorf("call: %v", err)
				return
			}
			if res.IsError {
				close(denied)
				return
			}
			if n == 20 {
				close(busy)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	// The audit log is busy before the edit: twenty calls audited.
	select {
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the host's calls did not get going")
	}
	edited := time.Now()
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: deny\ndeny: [mcp:honest:echo]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-denied:
	case <-time.After(30 * time.Second):
		t.Fatal("the deny never applied while the audit log beside the policy was busy")
	}
	reloaded, ok := firstAuditTime(t, g, "policy_reload", func(l map[string]any) bool { return l["ok"] == true })
	if !ok {
		t.Fatal("the deny applied with no policy_reload audit record")
	}
	took, bound := reloaded.Sub(edited), 10*policyReloadLatency
	t.Logf("the deny applied %s after the edit", took)
	if took > bound {
		t.Errorf("the deny applied %s after the edit; want within %s (the watcher needs %s)", took, bound, policyReloadLatency)
	}
	if fi, err := os.Stat(g.audit); err != nil || fi.Size() == 0 {
		t.Fatalf("the audit log beside the policy was not written: %v", err)
	}
	assertEveryAuditLineHasEvent(t, g, "policy_load", "policy_reload", "decision")
}

// assertEveryAuditLineHasEvent decodes every audit line and checks that
// each has an event, and that the kinds named were seen.
func assertEveryAuditLineHasEvent(t *testing.T, g *gate, kinds ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range g.auditLines(t) {
		ev, _ := l["event"].(string)
		if ev == "" || ev == "other" {
			t.Errorf("audit line without an event of its own: %v", l)
		}
		seen[ev] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("no %s line in the audit log (saw %v)", k, seen)
		}
	}
}

// The same through the reference server's own get-env tool: a Node child
// started the way the README's quick start starts it sees none of the
// secrets, and still runs.
func TestSecretsNeverReachReferenceServer(t *testing.T) {
	t.Parallel()
	needNode(t)
	g := gateCommand(t, map[string]server{"everything": everything()})
	g.cmd.Env = append(withoutProxies(g.cmd.Env), leakingEnv...)
	sess := g.connect(t, nil)
	env := resultText(call(t, sess, "everything__get-env", map[string]any{}))
	if !strings.Contains(env, `"PATH"`) || !strings.Contains(env, `"GZIP_ALLOWED_DOMAINS"`) {
		t.Fatalf("get-env did not list the environment: %.300s", env)
	}
	for _, kv := range leakingEnv {
		name, value, _ := strings.Cut(kv, "=")
		if strings.Contains(env, `"`+name+`"`) || len(value) > 3 && strings.Contains(env, value) {
			t.Errorf("%s reached the reference server", name)
		}
	}
}
