// Command soak drives the mcp-gate binary with many calls against the echo
// server (e2e/echoserver), through the load generator the benchmark uses
// (e2e/loadgen), and reports what became of every call — answered with its
// own text, refused, errors, lost, duplicated — and the gate's memory,
// descriptors and children before and after. Each call carries a text of
// its own, so a reply given to the wrong call counts as wrong. It also
// checks the audit log holds one decision line per call. It is a tool, not
// a timed test: the test suite runs a few calls of it.
//
//	go run ./e2e/soak -calls 5000000 -c 8
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

type config struct {
	calls, c   int
	stall      time.Duration
	gate, echo string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.calls, "calls", 200000, "calls to make")
	flag.IntVar(&cfg.c, "c", 8, "calls in flight")
	flag.DurationVar(&cfg.stall, "stall", 30*time.Second, "count the unanswered calls as lost when no reply comes for this long")
	flag.StringVar(&cfg.gate, "gate", "", "mcp-gate binary (default: built from this checkout)")
	flag.StringVar(&cfg.echo, "echo", "", "echo server binary (default: built from this checkout)")
	flag.Parse()
	r, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	fmt.Print(r)
	if !r.clean() {
		os.Exit(1)
	}
}

type result struct {
	cfg           config
	tally         loadgen.Tally
	before, after loadgen.Snapshot
	audited       int
	elapsed       time.Duration
}

func (r result) clean() bool {
	t := r.tally
	return t.Errors == 0 && t.Lost == 0 && t.Duplicated == 0 && t.Wrong == 0 && t.Denied == 0 && r.audited == t.Sent
}

func (r result) String() string {
	t := r.tally
	var b bytes.Buffer
	fmt.Fprintf(&b, "soak: %d calls at c=%d in %v (%.0f calls/s)\n", t.Sent, r.cfg.c, r.elapsed.Round(time.Millisecond), float64(t.Sent)/r.elapsed.Seconds())
	fmt.Fprintf(&b, "  answered ok %d, denied %d, errors %d, wrong %d, lost %d, duplicated %d\n", t.OK, t.Denied, t.Errors, t.Wrong, t.Lost, t.Duplicated)
	fmt.Fprintf(&b, "  audit decision lines %d (want %d)\n", r.audited, t.Sent)
	fmt.Fprintf(&b, "  gate before: %v\n  gate after:  %v\n", r.before, r.after)
	for _, s := range t.Samples {
		fmt.Fprintf(&b, "  sample: %s\n", s)
	}
	return b.String()
}

func run(cfg config) (result, error) {
	res := result{cfg: cfg}
	dir, err := os.MkdirTemp("", "mcp-gate-soak-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if err := loadgen.Prepare(dir, &cfg.gate, &cfg.echo); err != nil {
		return res, err
	}
	policy := filepath.Join(dir, "policy.yaml")
	audit := filepath.Join(dir, "audit.jsonl")
	servers, err := loadgen.EchoServers(dir, cfg.echo)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(policy, []byte("version: 1\nfallback: deny\nallow: [\"mcp:echo:*\"]\n"), 0o600); err != nil {
		return res, err
	}
	cmd := exec.Command(cfg.gate, "serve", "--servers", servers, "--policy", policy, "--audit-log", audit, "--log-level", "warn")
	cmd.Env = loadgen.PrivateDirs(os.Environ(), filepath.Dir(servers))
	cmd.Stderr = os.Stderr
	c, err := loadgen.Start(cmd)
	if err != nil {
		return res, err
	}
	defer c.Close()
	if err := c.Initialize(); err != nil {
		return res, err
	}
	if _, err := c.ListTools(); err != nil {
		return res, err
	}
	// Warm: the upstream is running and the catalog loaded.
	if err := c.Call(loadgen.Call{Tool: "echo__echo", Args: `{"text":"warm"}`}); err != nil {
		return res, err
	}
	if res.before, err = loadgen.Measure(c.Pid()); err != nil {
		return res, err
	}
	start := time.Now()
	res.tally, err = c.Tally("echo__echo", cfg.c, cfg.calls, nil, cfg.stall)
	res.elapsed = time.Since(start)
	if err != nil {
		return res, err
	}
	if res.after, err = loadgen.Measure(c.Pid()); err != nil {
		return res, err
	}
	n, err := countDecisions(audit)
	res.audited = n - 1 // the warm-up call
	return res, err
}

// countDecisions counts the decision lines of an audit log.
func countDecisions(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if bytes.Contains(line, []byte(`"event":"decision"`)) {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return n, err
		}
	}
}
