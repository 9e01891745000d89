package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"
)

// Race reports of the gates the suite starts. A gate built with -race
// writes what the detector finds to its stderr, which the suite reads only
// for the gates it starts itself: a gate started by a real host (Claude
// Code, Codex, supergateway), by `mcp-gate install`, or by another gate
// writes its stderr where that parent puts it, a log of the host's or
// nowhere. So every race-built process the suite starts writes its reports
// to a file instead (GORACE's log_path: the detector appends ".PID"), in
// one directory of the run:
//
//   - a gate a test owns (gateCommand, connectClient) gets a prefix of its
//     own, and its cleanup fails the test with the report;
//   - a test that has a gate started through a host puts raceEnv(t) into
//     the host's environment (or codexRaceArgs into Codex's server entry:
//     Codex passes its servers an allowlist of variables), and its cleanup
//     fails the test with any report of that prefix;
//   - anything else inherits TestMain's GORACE, whose prefix says no test
//     claimed it, and TestMain fails the run after m.Run with every report
//     no test claimed (reportUnclaimedRaces), including those written by a
//     gate still exiting after its test's cleanup.

var (
	// raceDir holds the reports of the run ("" without -race).
	raceDir string
	// baseGORACE is GORACE without log_path (atexit_sleep_ms=0: TestMain).
	baseGORACE string
	raceSeq    atomic.Int64
	// claimedRaces are the report files a test has already failed with
	// (or, for the test of this mechanism, expected).
	claimedRaces sync.Map

	// testSpans are when the tests that asked for a report prefix ran, to
	// name the tests running when a report no test named was written.
	testSpans struct {
		sync.Mutex
		m map[string]*span
	}
)

type span struct{ start, end time.Time }

// unclaimedPrefix is the report prefix of race-built processes started by
// no helper that names a test.
const unclaimedPrefix = "unattributed"

// setupRaceLogs makes the report directory under dir and sets GORACE for
// every process the tests start without a prefix of their own. It keeps
// atexit_sleep_ms=0 (see TestMain).
func setupRaceLogs(dir string) error {
	// A log_path of the caller's would not be the one the suite reads
	// (the race runtime takes the last).
	var keep []string
	for _, f := range strings.Fields(os.Getenv("GORACE")) {
		if !strings.HasPrefix(f, "log_path=") {
			keep = append(keep, f)
		}
	}
	g := strings.Join(keep, " ")
	if !strings.Contains(g, "atexit_sleep_ms") {
		g = strings.TrimSpace(g + " atexit_sleep_ms=0")
	}
	baseGORACE = g
	if !raceEnabled {
		return os.Setenv("GORACE", g)
	}
	raceDir = filepath.Join(dir, "race")
	// GORACE's parser splits its options at spaces, ':' and ',', and the
	// path is also read back from the value (racePrefixOf) and put into a
	// Codex config string.
	if strings.ContainsAny(raceDir, " \t\n:,='\"\\") {
		return fmt.Errorf("the race report directory %q holds a space, ':', ',', '=', a quote or a backslash, which GORACE cannot carry: set TMPDIR to a plain path", raceDir)
	}
	if err := os.Mkdir(raceDir, 0o700); err != nil {
		return err
	}
	if err := buildRacyGate(dir); err != nil {
		return err
	}
	return os.Setenv("GORACE", goraceWith(filepath.Join(raceDir, unclaimedPrefix)))
}

// goraceWith is GORACE's value for a process whose reports go to
// prefix.PID.
func goraceWith(prefix string) string {
	if !raceEnabled {
		return baseGORACE
	}
	return strings.TrimSpace(baseGORACE + " log_path=" + prefix)
}

// newRacePrefix is a report prefix of its own, named after the test so that
// a report found only at the end of the run still says whose it was.
func newRacePrefix(t *testing.T) string {
	noteSpan(t)
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, t.Name())
	return filepath.Join(raceDir, fmt.Sprintf("%s.%d", name, raceSeq.Add(1)))
}

// noteSpan records when t started (about: at its first prefix) and ended.
func noteSpan(t *testing.T) {
	testSpans.Lock()
	defer testSpans.Unlock()
	if testSpans.m == nil {
		testSpans.m = map[string]*span{}
	}
	if old := testSpans.m[t.Name()]; old != nil && old.end.IsZero() {
		return // the same run of the test: its first prefix set the start
	}
	s := &span{start: time.Now()}
	testSpans.m[t.Name()] = s
	t.Cleanup(func() {
		testSpans.Lock()
		defer testSpans.Unlock()
		s.end = time.Now()
	})
}

// runningAt names the tests of testSpans that were running at time w.
func runningAt(w time.Time) []string {
	testSpans.Lock()
	defer testSpans.Unlock()
	var out []string
	for name, s := range testSpans.m {
		if !w.Before(s.start) && (s.end.IsZero() || !w.After(s.end)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// raceEnv is the GORACE entry for the environment of a host (or anything
// else) that starts gates on t's behalf: their race reports go to a prefix
// of t's, and t fails with them when it ends. Call it before starting the
// host, so that this check runs after the host's own cleanup stopped it.
func raceEnv(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return "GORACE=" + baseGORACE
	}
	prefix := newRacePrefix(t)
	t.Cleanup(func() {
		if r := takeRaceReports(prefix); r != "" {
			t.Errorf("a gate started on this test's behalf (by a host, another gate, or the test with ownUserEnv) reported a data race:\n%s", r)
		}
	})
	return "GORACE=" + goraceWith(prefix)
}

// codexRaceArgs are Codex -c overrides that put GORACE (the value of the
// entry env, from raceEnv) into the env table of every MCP server of the
// config file: Codex passes a server an allowlist of its own variables
// (HOME, PATH, LANG, ...) and the server's env table, never GORACE. The
// overrides merge into the entries the file has (command and args stay).
func codexRaceArgs(t *testing.T, config, env string) []string {
	t.Helper()
	if !raceEnabled {
		return nil
	}
	b, err := os.ReadFile(config)
	if os.IsNotExist(err) {
		return nil // no servers
	}
	if err != nil {
		t.Fatalf("reading the Codex config for its MCP servers: %v", err)
	}
	var conf struct {
		Servers map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(b, &conf); err != nil {
		t.Fatalf("parsing the Codex config %s: %v", config, err)
	}
	value := strings.TrimPrefix(env, "GORACE=")
	var args []string
	for _, name := range slices.Sorted(maps.Keys(conf.Servers)) {
		// Keys of the servers are bare TOML keys (codex mcp add refuses
		// others), and the value a basic string.
		args = append(args, "-c", fmt.Sprintf("mcp_servers.%s.env.GORACE=%s", name, strconv.Quote(value)))
	}
	return args
}

// withRaceEnv gives a servers-file entry that runs a gate (started by
// another gate, which passes its servers only an allowlist of variables
// and the entry's env) the GORACE of env.
func withRaceEnv(s server, env string) server {
	if !raceEnabled {
		return s
	}
	e := map[string]string{}
	for k, v := range s.Env {
		e[k] = v
	}
	e["GORACE"] = strings.TrimPrefix(env, "GORACE=")
	s.Env = e
	return s
}

// raceLogEnv gives the gate's command a report prefix of its own, unless
// it has one or has started.
func (g *gate) raceLogEnv(t *testing.T) {
	if !raceEnabled || g.raceLog != "" || g.cmd == nil || g.cmd.Process != nil {
		return
	}
	g.raceLog = newRacePrefix(t)
	if g.cmd.Env == nil {
		g.cmd.Env = os.Environ()
	}
	g.cmd.Env = append(g.cmd.Env, "GORACE="+goraceWith(g.raceLog))
}

// takeRaceReport is the race report of the gate, from its report files
// and its stderr (a gate whose environment a test replaced reports there),
// or "": the files are claimed, so the end of the run does not report them
// again.
func (g *gate) takeRaceReport() string {
	if !raceEnabled {
		return ""
	}
	var r string
	if g.raceLog != "" {
		r = takeRaceReports(g.raceLog)
	}
	if g.stderr != nil && strings.Contains(g.stderr.String(), "WARNING: DATA RACE") {
		r += "in the gate's stderr:\n" + g.stderr.String()
	}
	return r
}

// takeRaceReports claims the report files of prefix and returns them, each
// headed by its pid.
func takeRaceReports(prefix string) string {
	files, _ := filepath.Glob(prefix + ".*")
	var b strings.Builder
	for _, f := range files {
		pid := strings.TrimPrefix(f, prefix+".")
		if _, err := strconv.Atoi(pid); err != nil {
			continue // another prefix with this one's start: T.1 and T.12
		}
		if _, dup := claimedRaces.LoadOrStore(f, true); dup {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			data = []byte(err.Error())
		}
		fmt.Fprintf(&b, "race report of pid %s (%s):\n%s\n", pid, f, data)
	}
	return b.String()
}

// reportUnclaimedRaces prints every report file no test claimed, with the
// test its prefix names (or that none did), the pid and the report, and
// reports whether there was one. TestMain fails the run with it. The same
// race in many gates (a host starting one per session) is printed in full
// once, and after it how many more reported it.
func reportUnclaimedRaces() bool {
	files, err := unclaimedRaces()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: reading the race report directory: %v\n", err)
		return true
	}
	again := map[string][]string{}
	var order []string
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if _, seen := again[string(data)]; !seen {
			order = append(order, string(data))
			fmt.Fprintf(os.Stderr, "FAIL: %s\n", describeRace(f))
			again[string(data)] = []string{}
			continue
		}
		again[string(data)] = append(again[string(data)], filepath.Base(f))
	}
	for i, r := range order {
		if n := len(again[r]); n > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the same race (report %d above) was reported by %d more gates: %s\n", i+1, n, strings.Join(again[r], " "))
		}
	}
	return len(files) > 0
}

// unclaimedRaces are the report files of the run no test claimed.
func unclaimedRaces() ([]string, error) {
	if raceDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(raceDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		f := filepath.Join(raceDir, e.Name())
		if _, claimed := claimedRaces.Load(f); !claimed {
			out = append(out, f)
		}
	}
	return out, nil
}

// describeRace says which process wrote the report file f, on whose
// behalf, and what it reported.
func describeRace(f string) string {
	data, err := os.ReadFile(f)
	if err != nil {
		data = []byte(err.Error())
	}
	name, pid := filepath.Base(f), "?"
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name, pid = name[:i], name[i+1:]
	}
	who := "a process no test named (it inherited the run's GORACE: started by a test without the harness's helpers, or by something such a test started)"
	if name == unclaimedPrefix {
		if fi, err := os.Stat(f); err == nil {
			who += fmt.Sprintf("; tests running when it was written (%s), of those that used the harness: %s",
				fi.ModTime().Format(time.RFC3339Nano), strings.Join(runningAt(fi.ModTime()), ", "))
		}
	} else {
		who = "a gate started for test " + strings.TrimSuffix(name, filepath.Ext(name)) + ", written after the test's check had run (a gate still exiting, or left running)"
	}
	return fmt.Sprintf("a race-built %s (pid %s) reported a data race that no test claimed; it was %s. The report (%s):\n%s", filepath.Base(gateBin), pid, who, f, data)
}

// racePrefixOf is the log_path of a GORACE entry.
func racePrefixOf(env string) string {
	for _, f := range strings.Fields(strings.TrimPrefix(env, "GORACE=")) {
		if p, ok := strings.CutPrefix(f, "log_path="); ok {
			return p
		}
	}
	return ""
}
