package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return !strings.HasPrefix(rest, "Z")
}

// descendants returns every process below pid.
func descendants(t *testing.T, pid int) []int {
	var out []int
	for _, c := range children(t, pid) {
		out = append(out, c)
		out = append(out, descendants(t, c)...)
	}
	return out
}

// Issue 10: SIGHUP (the terminal closed) is a clean shutdown: the gate
// stops its children, even one that ignores EOF and SIGTERM, and exits 0.
func TestSIGHUPStopsChildren(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest"), "stubborn": testserver("stubborn")})
	sess := g.connect(t, nil)
	if tools := toolNames(t, sess); tools["stubborn__echo"] == nil || tools["honest__echo"] == nil {
		t.Fatalf("tools: %v", keys(tools))
	}
	kids := children(t, g.cmd.Process.Pid)
	if len(kids) != 2 {
		t.Fatalf("children before SIGHUP: %v", kids)
	}
	t.Cleanup(func() {
		for _, k := range kids {
			signalPID(k, syscall.SIGKILL) // when the test fails
		}
	})
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	pid := g.cmd.Process.Pid
	waitFor(t, "the gate to exit after SIGHUP", 30*time.Second, func() bool { return !alive(pid) })
	sess.Close() // waits for the process
	if code := g.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the gate's exit after SIGHUP: status %d (want a clean exit)\n%s", code, g.stderr.String())
	}
	if n := strings.Count(g.stderr.String(), `msg="upstream stopped"`); n != 2 {
		t.Errorf("%d upstreams stopped by the gate; want 2\n%s", n, g.stderr.String())
	}
	for _, k := range kids {
		if alive(k) {
			t.Errorf("child %d outlived the gate's SIGHUP shutdown", k)
		}
	}
}

// Issue 10: a SIGKILLed gate leaves no child behind, not even one that
// ignores EOF and SIGTERM (Linux: the parent-death signal).
func TestSIGKILLedGateLeavesNoChild(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"stubborn": testserver("stubborn")})
	sess := g.connect(t, nil)
	toolNames(t, sess)
	kids := children(t, g.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("children: %v", kids)
	}
	t.Cleanup(func() { signalPID(kids[0], syscall.SIGKILL) }) // when the test fails
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stubborn child to die with the gate", 10*time.Second, func() bool { return !alive(kids[0]) })
}

// Issue 10: a servers file that names the gate itself, on that same file,
// has that entry refused with a message; the other entries serve. A gate
// started indirectly (through a shell) on the same file finds the marker
// its parent set and serves nothing. Either way no chain of gates grows.
func TestSelfNestingRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	servers := map[string]server{
		"honest": testserver("honest"),
		"gate":   {Command: gateBin, Args: []string{"serve", "--servers", path}},
		"viash":  {Command: "/bin/sh", Args: []string{"-c", `exec "$0" serve --servers "$1"`, gateBin, path}},
	}
	// The nested gates' race reports (racelog_test.go).
	for name, s := range servers {
		if name != "honest" {
			servers[name] = withRaceEnv(s, raceEnv(t))
		}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve", "--servers", path, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"))
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	var logs logSink
	sess := g.connect(t, &mcp.ClientOptions{LoggingMessageHandler: logs.handle})
	if ins := sess.InitializeResult().Instructions; !strings.Contains(ins, `"gate" runs this gate on its own`) {
		t.Errorf("instructions do not name the refused entry: %q", ins)
	}
	tools := toolNames(t, sess)
	if tools["honest__echo"] == nil {
		t.Fatalf("the other entries stopped working: %v", keys(tools))
	}
	for name := range tools {
		if !strings.HasPrefix(name, "honest__") {
			t.Errorf("tool %q from a nested gate", name)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gate stderr:\n%s", stderr.String())
		}
	})
	if !waitStderr(stderr, "runs this gate on its own servers file", 1) {
		t.Errorf("stderr does not say why the entry was refused")
	}
	waitFor(t, "the gate to log why the indirectly nested gate serves nothing", 30*time.Second, func() bool {
		return strings.Contains(stderr.String(), "started by a gate reading the same")
	})
	waitFor(t, "the refusal to reach the host as a log message", 10*time.Second, func() bool { return logs.has(`"gate" runs this gate`) })
	gates := 0
	for _, p := range descendants(t, cmd.Process.Pid) {
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p), "exe")); err == nil && exe == gateBin && alive(p) {
			gates++
		}
	}
	if gates > 1 {
		t.Fatalf("%d nested gates below the gate; want at most the one started through the shell", gates)
	}
}

// logSink collects the host's log notifications.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) handle(_ ctxType, req *mcp.LoggingMessageRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, _ := json.Marshal(req.Params.Data)
	l.lines = append(l.lines, string(req.Params.Level)+" "+string(b))
}

func (l *logSink) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, strings.ReplaceAll(s, `"`, `\"`)) || strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// listErr lists tools and returns the JSON-RPC error the gate answered.
func listErr(t *testing.T, sess *mcp.ClientSession) *jsonrpc.Error {
	t.Helper()
	_, err := sess.ListTools(ctxT(t, 60*time.Second), nil)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("tools/list: %v; want a JSON-RPC error", err)
	}
	return werr
}

// Issue 10: an invalid policy keeps the session up, lists nothing, allows
// nothing, and says why where hosts show it (the tools/list error); fixing
// the file brings the tools back through the watcher, with list_changed.
func TestBrokenPolicyKeepsSessionUpFailClosed(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, "version: 1\nfallback: ask\nallwo: [mcp:honest:*]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	changed := make(chan struct{}, 10)
	sess := g.connect(t, &mcp.ClientOptions{ToolListChangedHandler: func(ctxType, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	werr := listErr(t, sess)
	if !strings.Contains(werr.Message, "allwo") || !strings.Contains(werr.Message, "policy.yaml:3:") {
		t.Fatalf("the host sees %q; want the policy's problem with its line", werr.Message)
	}
	if _, err := sess.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "honest__echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Fatal("a call went through with no valid policy")
	}
	if ins := sess.InitializeResult().Instructions; !strings.Contains(ins, "allwo") {
		t.Errorf("instructions: %q", ins)
	}
	if err := os.WriteFile(pol, []byte("version: 1\nfallback: ask\nallow: [mcp:honest:*]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed after the policy was fixed")
	}
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "back"})); got != "back" {
		t.Fatalf("after the fix: %q", got)
	}
}

// Issue 10: a servers file that is missing or not JSON keeps the session
// up with the error as the answer to tools/list; with /dev/null on stdin
// (no host) the gate exits 1 as before, saying why.
func TestUnreadableServersFileShownToHost(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{"missing": "", "bad JSON": `{"mcpServers": {"a": {"command": "x",}}}`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "servers.json")
			want := "no such file"
			if content != "" {
				os.WriteFile(path, []byte(content), 0o600)
				want = "line 1, column 38"
			}
			wd, _ := os.Getwd()
			cmd := exec.Command(gateBin, "serve", "--servers", path, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"))
			cmd.Env = ownUserEnv(t)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			g := &gate{cmd: cmd, stderr: stderr}
			sess := g.connect(t, nil)
			if werr := listErr(t, sess); !strings.Contains(werr.Message, want) {
				t.Fatalf("tools/list error %q; want it to say %q", werr.Message, want)
			}
			out, err := exec.Command(gateBin, "serve", "--servers", path).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), want) {
				t.Fatalf("with no host: %v\n%s", err, out)
			}
		})
	}
}

// Issue 10: keys other hosts write are accepted with one warning each;
// "disabled" leaves the server out; every unknown key of every entry is
// reported, and only the entries with one are left out.
func TestServersFileOtherHostsKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	ts := testserverBin
	os.WriteFile(path, []byte(`{"mcpServers": {
  "honest": {"command": "`+ts+`", "args": ["--mode", "honest"], "alwaysAllow": ["echo"], "autoApprove": [], "disabledTools": ["blob"],
             "timeout": 60, "description": "d", "transportType": "stdio", "disabled": false},
  "off":    {"command": "`+ts+`", "args": ["--mode", "honest"], "disabled": true},
  "typo":   {"command": "`+ts+`", "comand": "x", "argz": []},
  "typo2":  {"command": "`+ts+`", "enviroment": {}},
  "a-server-key-so-long-that-no-tool-name-would-fit-after-it": {"command": "`+ts+`"}
}}`), 0o600)
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve", "--servers", path, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"))
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	var logs logSink
	sess := g.connect(t, &mcp.ClientOptions{LoggingMessageHandler: logs.handle})
	tools := toolNames(t, sess)
	for name := range tools {
		if !strings.HasPrefix(name, "honest__") {
			t.Errorf("tool %q listed; only honest's should be", name)
		}
	}
	if tools["honest__echo"] == nil || tools["honest__blob"] == nil {
		t.Fatalf("honest's tools: %v", keys(tools))
	}
	ins := sess.InitializeResult().Instructions
	for _, k := range []string{`"comand"`, `"argz"`, `"enviroment"`, `"a-server-key-so-long-that-no-tool-name-would-fit-after-it" left out`} {
		if !strings.Contains(ins, k) {
			t.Errorf("instructions do not report %s: %q", k, ins)
		}
		waitFor(t, "the host log to report "+k, 10*time.Second, func() bool { return logs.has(k) })
	}
	for _, k := range []string{"alwaysAllow", "autoApprove", "disabledTools", "timeout", "description", "transportType", "disabled"} {
		waitStderr(stderr, `\"`+k+`\" is another host's key`, 1)
		if n := strings.Count(stderr.String(), `\"`+k+`\" is another host's key`); n != 1 {
			t.Errorf("%d warnings for %q; want one\n%s", n, k, stderr.String())
		}
	}
	if !waitStderr(stderr, `server disabled in the servers file`, 1) || !strings.Contains(stderr.String(), "server=off") {
		t.Errorf("no word about the disabled server:\n%s", stderr.String())
	}
}

// Issue 10: an upstream that fails to start is visible to the host with
// its own last stderr lines: alone, as the tools/list error; beside a
// working one, as a log notification while the other's tools are listed.
func TestUpstreamStartFailureShownToHost(t *testing.T) {
	t.Parallel()
	t.Run("alone", func(t *testing.T) {
		g := gateCommand(t, map[string]server{"broken": testserver("exit")})
		sess := g.connect(t, nil)
		if werr := listErr(t, sess); !strings.Contains(werr.Message, "missing API key") || !strings.Contains(werr.Message, `"broken"`) {
			t.Fatalf("tools/list error %q; want the server's stderr", werr.Message)
		}
	})
	t.Run("beside another", func(t *testing.T) {
		g := gateCommand(t, map[string]server{"broken": testserver("exit"), "honest": testserver("honest")})
		var logs logSink
		sess := g.connect(t, &mcp.ClientOptions{LoggingMessageHandler: logs.handle})
		if tools := toolNames(t, sess); tools["honest__echo"] == nil {
			t.Fatalf("tools: %v", keys(tools))
		}
		waitFor(t, "the start failure as a host log message", 10*time.Second, func() bool { return logs.has("missing API key") })
	})
}

// Issue 10: one log format on stderr; --log-level never filters the
// audit, which goes to stderr in that format when there is no
// --audit-log.
func TestLogFormatAndAuditOnStderr(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			wd, _ := os.Getwd()
			cmd := exec.Command(gateBin, "serve", "--servers", writeServers(t, dir, map[string]server{"honest": testserver("honest")}),
				"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--log-format", format, "--log-level", "error")
			cmd.Env = ownUserEnv(t)
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			g := &gate{cmd: cmd, stderr: stderr}
			sess := g.connect(t, nil)
			call(t, sess, "honest__echo", map[string]any{"text": "hi"})
			sess.Close()
			cmd.Wait()
			out := strings.TrimSpace(stderr.String())
			decisions := 0
			for _, line := range strings.Split(out, "\n") {
				if format == "json" {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("stderr line is not JSON: %q", line)
					}
					if m["event"] == "decision" {
						decisions++
					}
				} else {
					if strings.HasPrefix(line, "{") {
						t.Fatalf("a JSON line in text mode: %q", line)
					}
					if strings.Contains(line, "event=decision") {
						decisions++
					}
				}
				if strings.Contains(line, "level=INFO") && !strings.Contains(line, "event=") || strings.Contains(line, `"level":"INFO"`) && !strings.Contains(line, `"event"`) {
					t.Errorf("an info log line passed --log-level error: %q", line)
				}
			}
			if decisions != 1 {
				t.Fatalf("%d decision lines on stderr; want 1 whatever --log-level says:\n%s", decisions, out)
			}
		})
	}
}

// Issue 10: each audit line is handed to the OS before its call is
// forwarded: the upstream, reading the audit file when the call reaches
// it, finds the call's own decision line already there.
func TestAuditWrittenBeforeForwarding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	wd, _ := os.Getwd()
	cmd := exec.Command(gateBin, "serve", "--servers", writeServers(t, dir, map[string]server{"a": testserver("auditcheck", auditPath)}),
		"--policy", filepath.Join(wd, "testdata", "allow-all.yaml"), "--audit-log", auditPath)
	cmd.Env = ownUserEnv(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	g := &gate{cmd: cmd, stderr: stderr}
	sess := g.connect(t, nil)
	for i := 1; i <= 20; i++ {
		if got := resultText(call(t, sess, "a__count", map[string]any{})); got != strconv.Itoa(i) {
			t.Fatalf("call %d found %s decision lines in the audit when it reached the server", i, got)
		}
	}
}

// Issue 10: serve --help is a success; version names the commit.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"serve", "check", "explain"} {
		out, err := exec.Command(gateBin, c, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--") {
			t.Errorf("%s --help: %v\n%s", c, err, out)
		}
	}
	out, err := exec.Command(gateBin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "mcp-gate ") {
		t.Fatalf("version: %v %q", err, out)
	}
	// The commit the toolchain recorded (none when built with
	// -buildvcs=false, as some CI environments set).
	info, err := exec.Command("go", "version", "-m", gateBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "commit unknown"
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
			want = "commit " + strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("version says %q; want %q", out, want)
	}
}

// Issue 10, measured with the real host: Claude Code's `claude mcp list`
// (no API key needed) shows the gate's tools/list error, so a broken
// policy reads as the policy's problem, not "Connection closed".
func TestClaudeMcpListShowsConfigError(t *testing.T) {
	// Not parallel (see harness_test.go): a real host: Claude Code is heavy on both CPUs.
	claude := filepath.Join(nodeModules, ".bin", "claude")
	if _, err := os.Stat(claude); err != nil {
		t.Fatalf("the pinned claude CLI is not installed (npm ci in e2e/): %v", err)
	}
	home := t.TempDir()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("version: 1\nfallback: ask\nallwo: [mcp:honest:*]\n"), 0o600)
	servers := writeServers(t, dir, map[string]server{"honest": testserver("honest")})
	race := raceEnv(t) // the race reports of the gates Claude Code starts
	run := func(args ...string) string {
		cmd := exec.Command(claude, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", claudeWaitsForMCP, race}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("mcp", "add", "gate", "--", gateBin, "serve", "--servers", servers, "--policy", pol)
	out := run("mcp", "list")
	if !strings.Contains(out, "tools fetch failed") || !strings.Contains(out, "allwo") || !strings.Contains(out, "policy file policy.yaml did not load") {
		t.Fatalf("claude mcp list does not show the policy's problem:\n%s", out)
	}
	os.WriteFile(pol, []byte("version: 1\nfallback: ask\nallow: [mcp:honest:*]\n"), 0o600)
	if out := run("mcp", "list"); !strings.Contains(out, "Connected") || strings.Contains(out, "failed") {
		t.Fatalf("with the policy fixed:\n%s", out)
	}
}

// Issue 10, measured with the real host: Codex marks the gate failed at
// startup with the tools/list error's message (app-server's
// mcpServer/startupStatus/updated, what its TUI prints), so a missing
// servers file reads as that, not "connection closed".
func TestCodexStartupShowsConfigError(t *testing.T) {
	// Not parallel (see harness_test.go): a real host: Codex is heavy on both CPUs.
	codex := filepath.Join(nodeModules, ".bin", "codex")
	if _, err := os.Stat(codex); err != nil {
		t.Fatalf("the pinned codex CLI is not installed (npm ci in e2e/): %v", err)
	}
	home, dir := t.TempDir(), t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	conf := "[mcp_servers.gate]\ncommand = " + strconv.Quote(gateBin) + "\nargs = [\"serve\", \"--servers\", " + strconv.Quote(missing) + "]\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// Codex passes its servers only an allowlist of its environment: the
	// gate gets GORACE through its entry (racelog_test.go).
	cmd := exec.Command(codex, append([]string{"app-server"}, codexRaceArgs(t, filepath.Join(home, "config.toml"), raceEnv(t))...)...)
	cmd.Dir = dir
	cmd.Env = []string{"CODEX_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	// Its own process group: codex starts processes of its own (the gate
	// among them) that write into its home, which must all be gone before
	// the temporary directories are removed.
	inNewGroup(cmd)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		signalGroup(cmd, syscall.SIGKILL)
		cmd.Wait()
		for i := 0; i < 50 && groupExists(cmd); i++ {
			time.Sleep(20 * time.Millisecond) // the group's last members exiting
		}
	})
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"e2e","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"thread/start","params":{}}`,
	} {
		io.WriteString(stdin, m+"\n")
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name, Status string
					Error        *string
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Method == "mcpServer/startupStatus/updated" && msg.Params.Name == "gate" && msg.Params.Status != "starting" {
				e := ""
				if msg.Params.Error != nil {
					e = *msg.Params.Error
				}
				found <- msg.Params.Status + ": " + e
				return
			}
		}
		close(found)
	}()
	select {
	case got := <-found:
		if !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "no such file") || !strings.Contains(got, "mcp-gate offers no tools") {
			t.Fatalf("codex's startup status for the gate: %q; want it failed with the gate's message", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("codex reported no startup status for the gate")
	}
}
