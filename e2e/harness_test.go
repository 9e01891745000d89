// Package e2e drives the real mcp-gate binary with a real MCP client (the
// go-sdk's) against real upstream servers: the official reference servers,
// pinned in package.json, and small Go servers for hostile or broken
// behaviour (testserver/). The binaries are built once per test run.
//
// Tests run in parallel (t.Parallel, -parallel in test.sh): most of their
// time is waiting (process starts, timeouts, a human's simulated delay), not
// CPU. A parallel test shares nothing with another: its files are under
// t.TempDir, its ports are :0, each gate has its own catalog cache and pins
// (userDirs), each local approval surface its own XDG_RUNTIME_DIR, each
// host CLI its own HOME, and no test changes the test process's
// environment or directory (t.Setenv would panic in one). A test stays
// sequential, saying why on its first line, when it measures memory, CPU
// or latency, or is heavy on both CPUs itself (the real hosts, the
// conformance suite, Chromium): Go runs the sequential tests first, alone,
// then the parallel ones together.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gate/mcp-gate/policy"
)

var (
	binDir        string
	gateBin       string
	testserverBin string
	minrelayBin   string // e2e/minrelay, the floor relay the benchmark measures
	nodeModules   string // absolute path of e2e/node_modules
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The test flags (-run, above all) are read here before m.Run reads
	// them: setupRaceLogs builds the racy gate only when -run may select
	// the test that needs it.
	flag.Parse()
	dir, err := os.MkdirTemp("", "mcp-gate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	gateBin = filepath.Join(dir, "mcp-gate")
	testserverBin = filepath.Join(dir, "testserver")
	minrelayBin = filepath.Join(dir, "minrelay")
	for pkg, out := range map[string]string{"../cmd/mcp-gate": gateBin, "./testserver": testserverBin, "./minrelay": minrelayBin} {
		args := []string{"build", "-o", out}
		// The test servers are fixtures, not the code under test, and
		// they are started through the gate, which passes them only its
		// allowlisted environment (no GORACE): built with -race, each
		// would sleep a second as it exits (see GORACE below), and a gate
		// stopping waits for its children.
		if raceEnabled && out == gateBin {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, pkg)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			return 1
		}
	}
	wd, _ := os.Getwd()
	nodeModules = filepath.Join(wd, "node_modules")
	// The gate keeps a catalog cache and pins per user: no gate of the
	// suite reads or writes the real user's (gateCommand gives each gate
	// its own; this covers any other way a test starts one). Set after the
	// builds, and GOCACHE kept, so a test that runs go keeps its cache.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg-cache"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "xdg-state"))
	// A program built with -race sleeps a second before it exits (the race
	// runtime's atexit_sleep_ms, 1000 by default), and the test waits for
	// every gate it stops: a second of nothing per gate, over a hundred
	// times a run. The trade: a race between goroutines still running as
	// the gate exits (its children being stopped, the last log lines) is
	// less likely to be caught in the act. Races on the paths the tests
	// drive while the gate serves are reported as they happen, and the
	// shutdown paths have unit tests of their own under -race. Children
	// inherit the setting. Under -race GORACE also sends each report to a
	// file of the run (racelog_test.go), so that a race of a gate a host
	// started is seen too: a report no test claimed fails the run.
	if err := setupRaceLogs(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if reportUnclaimedRaces() && code == 0 {
		code = 1
	}
	return code
}

// needNode skips nothing: the reference servers are part of the suite. It
// fails with the set-up step when they are missing.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js")); err != nil {
		t.Fatalf("the pinned reference servers are not installed: run `npm ci` in e2e/ (the README's test command does): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
}

// server is one entry of a servers file.
type server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Protocol pins the revision the gate speaks to the server (era tests).
	Protocol string `json:"protocol,omitempty"`
}

func everything() server {
	return server{
		Command: "node",
		Args:    []string{filepath.Join(nodeModules, "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"},
		// Its gzip tool's default argument is an internet URL: make an
		// accidental call fail at once instead of touching the network.
		Env: map[string]string{"GZIP_ALLOWED_DOMAINS": "example.invalid"},
	}
}

func filesystem(dir string) server {
	return server{
		Command: "node",
		Args:    []string{filepath.Join(nodeModules, "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), dir},
	}
}

func testserver(mode string, extra ...string) server {
	return server{Command: testserverBin, Args: append([]string{"--mode", mode}, extra...)}
}

// gate is a running mcp-gate binary.
type gate struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	audit  string
	dir    string
	// own is set by gateCommand, whose cleanup checks the gate's race
	// reports; connectClient checks the gates it does not own.
	own bool
	// raceLog is the prefix of the gate's race report files (GORACE's
	// log_path; racelog_test.go).
	raceLog string
}

// raced is the gate's race report, from its report files or its stderr, or
// "": a report fails the test even when the race did no visible harm this
// time.
func (g *gate) raced() string {
	return g.takeRaceReport()
}

func writeServers(t *testing.T, dir string, servers map[string]server) string {
	t.Helper()
	for name, s := range servers {
		if strings.HasPrefix(filepath.Base(s.Command), "mcp-gate") && s.Env["GORACE"] == "" {
			// A gate started by a gate (which passes its servers an
			// allowlist of its environment and the entry's env): its race
			// reports (racelog_test.go).
			servers[name] = withRaceEnv(s, raceEnv(t))
		}
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writePolicy writes a policy file for one test and returns its path.
func writePolicy(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// gateCommand prepares the binary with a servers file and extra flags.
func gateCommand(t *testing.T, servers map[string]server, flags ...string) *gate {
	t.Helper()
	dir := t.TempDir()
	g := &gate{stderr: &syncBuffer{}, audit: filepath.Join(dir, "audit.jsonl"), dir: dir, own: true}
	args := []string{"serve", "--servers", writeServers(t, dir, servers), "--audit-log", g.audit,
		"--start-timeout", "60s", "--log-level", "debug"}
	if !slices.Contains(flags, "--policy") {
		wd, _ := os.Getwd()
		args = append(args, "--policy", filepath.Join(wd, "testdata", "allow-all.yaml"))
	}
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--local-approvals") }) {
		// The local approval surface would keep an ask the test host
		// cannot carry open until its timeout; tests of it turn it on
		// (approvals_local_test.go).
		args = append(args, "--local-approvals=false")
	}
	args = append(args, flags...)
	g.cmd = exec.Command(gateBin, args...)
	// The catalog cache and the pins are per user: each gate of a test
	// has its own, unless the test shares them on purpose (lazy_test.go).
	// A test that sets more of the gate's environment appends to this.
	g.cmd.Env = append(os.Environ(), userDirs(dir)...)
	g.raceLogEnv(t)
	g.cmd.Stderr = g.stderr
	t.Cleanup(func() {
		// Cleanups run last first: the session's, which waits for the
		// gate to exit, has run.
		if r := g.raced(); r != "" {
			t.Errorf("the gate reported a data race:\n%s", r)
		}
		if t.Failed() {
			t.Logf("gate stderr:\n%s", g.stderr.String())
		}
	})
	return g
}

// userDirs is the environment that gives a gate a user's catalog cache and
// pins of its own, under dir: a warm cache or a pin left by another test
// (the directories TestMain sets are shared by the whole run, and tests
// run in parallel) would change what the gate starts and lists.
func userDirs(dir string) []string {
	return []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "XDG_STATE_HOME=" + filepath.Join(dir, "state")}
}

// ownUserEnv is the test process's environment with userDirs of the test's
// own, for a gate a test starts without gateCommand, and a race report
// prefix of the test's (racelog_test.go).
func ownUserEnv(t *testing.T) []string {
	return append(os.Environ(), append(userDirs(t.TempDir()), raceEnv(t))...)
}

// connect starts the gate and connects a go-sdk client to it.
func (g *gate) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, opts)
	return g.connectClient(t, client)
}

func (g *gate) connectClient(t *testing.T, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	g.raceLogEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: g.cmd, TerminateDuration: 10 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to the gate: %v\n%s", err, g.stderr.String())
	}
	t.Cleanup(func() {
		sess.Close() // waits for the gate to exit
		if !g.own {
			if r := g.raced(); r != "" {
				t.Errorf("the gate reported a data race:\n%s", r)
			}
		}
	})
	return sess
}

// auditLines returns the audit records written so far.
func (g *gate) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(g.audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func toolNames(t *testing.T, sess *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := sess.ListTools(ctxT(t, 90*time.Second), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func call(t *testing.T, sess *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := sess.CallTool(ctxT(t, 60*time.Second), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// children returns the PIDs of pid's child processes (Linux /proc).
func children(t *testing.T, pid int) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("process listing uses /proc")
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces and parentheses.
		s := string(stat)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
				out = append(out, p)
			}
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStderr waits up to 10 s until buf holds s at least n times, and
// reports whether it did. What a child writes to its stderr reaches buf
// through a pipe that another goroutine copies, so a line the gate logged
// before it answered can still be on its way when the test has the answer
// (more so with tests running in parallel); and a gate may log an event
// just after acting on it. A test checks for a log line after waiting here.
func waitStderr(buf *syncBuffer, s string, n int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(buf.String(), s) < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// countStderr is how many times buf holds s, for a check that it holds it
// exactly n times: it waits for n (waitStderr), then a quarter second
// more, so that an unwanted (n+1)th line still in the pipe is counted too.
func countStderr(buf *syncBuffer, s string, n int) int {
	waitStderr(buf, s, n)
	time.Sleep(250 * time.Millisecond)
	return strings.Count(buf.String(), s)
}

// syncBuffer is a bytes.Buffer safe for a process writing while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type ctxType = context.Context

// runCmd runs a command and returns its combined output.
func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// revisionOf is the revision the gate reports for a policy file.
func revisionOf(t *testing.T, path string) string {
	t.Helper()
	p, _, err := policy.LoadFile(path, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Revision()
}
