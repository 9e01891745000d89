package e2e

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// schedProcs is the GOMAXPROCS of the first scheduler trace line
// (GODEBUG=schedtrace) the gate printed past byte from of its stderr.
func schedProcs(t *testing.T, g *gate, from int) int {
	t.Helper()
	re := regexp.MustCompile(`SCHED \d+ms: gomaxprocs=(\d+)`)
	var n int
	waitFor(t, "a scheduler trace line", 30*time.Second, func() bool {
		m := re.FindStringSubmatch(g.stderr.String()[from:])
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		return m != nil
	})
	return n
}

// procsEnv is the gate's environment with a scheduler trace every 20 ms
// and no GOMAXPROCS of the test's.
func procsEnv(g *gate) {
	var env []string
	for _, kv := range g.cmd.Env {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	g.cmd.Env = append(env, "GODEBUG=schedtrace=20")
}

// The real binary's Ps per mode (cmd/mcp-gate/procs.go): a stdio session
// runs on one, the HTTP front end, which serves many sessions at once, on
// the runtime's default. TestProcsFor holds procsFor itself; this holds
// the command's call of it, where only the flags tell the modes apart.
func TestGateProcsPerMode(t *testing.T) {
	t.Parallel()
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skip("GOMAXPROCS is set here: the runtime's default cannot be known from this process")
	}
	def := runtime.GOMAXPROCS(0) // the gate's default too: same machine, same limits
	if def < 2 {
		t.Skipf("the runtime's default here is %d P: the HTTP front end's cannot be told from a stdio session's", def)
	}

	h := gateCommand(t, map[string]server{"honest": testserver("honest")})
	procsEnv(h)
	h.serveHTTP(t)
	if got := schedProcs(t, h, len(h.stderr.String())); got != def {
		t.Errorf("the HTTP front end runs on %d Ps, want the runtime's default, %d", got, def)
	}

	s := gateCommand(t, map[string]server{"honest": testserver("honest")})
	procsEnv(s)
	sess := s.connect(t, nil)
	if got := resultText(call(t, sess, "honest__echo", map[string]any{"text": "x"})); got != "x" {
		t.Fatalf("echo: %q", got)
	}
	if got := schedProcs(t, s, len(s.stderr.String())); got != 1 {
		t.Errorf("a stdio session runs on %d Ps, want 1", got)
	}
}
