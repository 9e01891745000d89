// Command storm rewrites the gate's policy file rapidly while calls run
// through the gate, and checks that every decision was made on a whole
// policy: each audit decision's revision must be one of the policies the
// storm wrote whole (a half-written file is a different revision, and
// often a valid policy of its own), and its verdict must be that policy's
// verdict for the tool. The contents alternate between allowing and
// denying the called tool, each one unique (a generation comment), and
// are written in bursts, by rename and in place (truncate and write, some
// in two halves with a pause between); after each burst the storm waits
// for the last content to be in force and reports how long that took from
// its write (the reload latency). It is a tool, not a timed test: the
// test suite runs a short storm of it.
//
//	go run ./e2e/storm -duration 30s
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

type config struct {
	duration   time.Duration
	c          int
	burst      int
	gap        time.Duration
	halfPause  time.Duration
	gate, echo string
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 30*time.Second, "how long the storm runs")
	flag.IntVar(&cfg.c, "c", 4, "calls in flight")
	flag.IntVar(&cfg.burst, "burst", 8, "policy writes per burst")
	flag.DurationVar(&cfg.gap, "gap", 5*time.Millisecond, "pause between the writes of a burst")
	flag.DurationVar(&cfg.halfPause, "half-pause", 20*time.Millisecond, "pause in the middle of a write in two halves (past the gate's settle time, 400ms, a half is taken for finished: the storm should then report mismatches)")
	flag.StringVar(&cfg.gate, "gate", "", "mcp-gate binary (default: built from this checkout)")
	flag.StringVar(&cfg.echo, "echo", "", "echo server binary (default: built from this checkout)")
	flag.Parse()
	r, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
	fmt.Print(r)
	if !r.clean() {
		os.Exit(1)
	}
}

type result struct {
	cfg        config
	writes     int
	bursts     int
	reloads    int // reloads the gate applied
	latencies  []time.Duration
	unsettled  int // bursts whose last content was not in force within the wait
	decisions  int
	allows     int
	denies     int
	mismatches int // decisions on a revision never written whole, or with another verdict
	badReloads int // reloads to a revision never written whole
	tally      loadgen.Tally
	samples    []string
}

func (r result) clean() bool {
	t := r.tally
	return r.mismatches == 0 && r.badReloads == 0 && r.unsettled == 0 && t.Errors == 0 && t.Lost == 0 &&
		t.Duplicated == 0 && t.Wrong == 0 && t.OK == r.allows && t.Denied == r.denies
}

func (r result) String() string {
	var b bytes.Buffer
	t := r.tally
	fmt.Fprintf(&b, "storm: %d policy writes in %d bursts over %v; the gate applied %d reloads\n", r.writes, r.bursts, r.cfg.duration, r.reloads)
	if len(r.latencies) > 0 {
		s := loadgen.Summarise(r.latencies)
		fmt.Fprintf(&b, "  reload latency (last write of a burst → in force): p50 %v, p90 %v, max %v (n=%d)\n", s.P50.Round(time.Millisecond), s.P90.Round(time.Millisecond), r.latencies[len(r.latencies)-1].Round(time.Millisecond), s.N)
	}
	fmt.Fprintf(&b, "  decisions %d (allow %d, deny %d); mismatches %d; reloads to a revision never written whole %d; bursts not settled %d\n", r.decisions, r.allows, r.denies, r.mismatches, r.badReloads, r.unsettled)
	fmt.Fprintf(&b, "  calls %d: ok %d, denied %d, errors %d, wrong %d, lost %d, duplicated %d\n", t.Sent, t.OK, t.Denied, t.Errors, t.Wrong, t.Lost, t.Duplicated)
	for _, s := range append(r.samples, t.Samples...) {
		fmt.Fprintf(&b, "  sample: %s\n", s)
	}
	return b.String()
}

// revision is the gate's name for a policy content.
func revision(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

func content(gen int, allow bool) []byte {
	verb := "deny"
	if allow {
		verb = "allow"
	}
	return fmt.Appendf(nil, "version: 1\nfallback: deny\n# storm generation %d\n%s: [\"mcp:echo:*\"]\n", gen, verb)
}

func run(cfg config) (result, error) {
	res := result{cfg: cfg}
	dir, err := os.MkdirTemp("", "mcp-gate-storm-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	if err := loadgen.Prepare(dir, &cfg.gate, &cfg.echo); err != nil {
		return res, err
	}
	pdir := filepath.Join(dir, "policy")
	if err := os.Mkdir(pdir, 0o700); err != nil {
		return res, err
	}
	policy := filepath.Join(pdir, "policy.yaml")
	audit := filepath.Join(dir, "audit.jsonl")
	servers, err := loadgen.EchoServers(dir, cfg.echo)
	if err != nil {
		return res, err
	}
	// Every content written whole, and its verdict for the echo tool.
	written := map[string]string{}
	first := content(0, true)
	written[revision(first)] = "allow"
	if err := os.WriteFile(policy, first, 0o600); err != nil {
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
	stop := make(chan struct{})
	calls := make(chan error, 1)
	go func() {
		var err error
		res.tally, err = c.Tally("echo__echo", cfg.c, 0, stop, 30*time.Second)
		calls <- err
	}()
	tail := &auditTail{path: audit}
	gen := 0
	deadline := time.Now().Add(cfg.duration)
	for time.Now().Before(deadline) {
		res.bursts++
		var last []byte
		var lastAt time.Time
		for i := range cfg.burst {
			gen++
			// Alternating within a burst, and the burst's last content
			// alternating from one burst to the next.
			allow := (gen+res.bursts)%2 == 0
			b := content(gen, allow)
			written[revision(b)] = map[bool]string{true: "allow", false: "deny"}[allow]
			if err := writePolicy(policy, b, i%3, cfg.halfPause); err != nil {
				close(stop)
				return res, err
			}
			res.writes++
			last, lastAt = b, time.Now()
			time.Sleep(cfg.gap)
		}
		// Wait for the last content of the burst to be in force.
		want := revision(last)
		settled := false
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
			at, ok, err := tail.reloadedTo(want)
			if err != nil {
				close(stop)
				return res, err
			}
			if ok {
				res.latencies = append(res.latencies, at.Sub(lastAt))
				settled = true
				break
			}
		}
		if !settled {
			res.unsettled++
		}
	}
	close(stop)
	if err := <-calls; err != nil {
		return res, err
	}
	slices.Sort(res.latencies)
	return res, check(&res, audit, written)
}

// writePolicy writes b over path: by rename (how editors save), in place
// in one write, or in place in two halves with a pause, a writer caught
// in the middle.
func writePolicy(path string, b []byte, how int, halfPause time.Duration) error {
	switch how {
	case 0:
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	case 1:
		return os.WriteFile(path, b, 0o600)
	default:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		half := len(b) / 2
		if _, err := f.Write(b[:half]); err != nil {
			f.Close()
			return err
		}
		time.Sleep(halfPause)
		if _, err := f.Write(b[half:]); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// auditTail reads the audit log as it grows, for the reload lines.
type auditTail struct {
	path    string
	off     int64
	partial []byte
	reloads map[string]time.Time
}

type auditLine struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"`
	OK       *bool     `json:"ok"`
	Revision string    `json:"revision"`
	Verdict  string    `json:"verdict"`
	Tool     string    `json:"tool"`
	Rule     string    `json:"rule"`
}

// reloadedTo reports whether, and when, the gate applied revision.
func (a *auditTail) reloadedTo(rev string) (time.Time, bool, error) {
	if a.reloads == nil {
		a.reloads = map[string]time.Time{}
	}
	f, err := os.Open(a.path)
	if err != nil {
		return time.Time{}, false, err
	}
	defer f.Close()
	if _, err := f.Seek(a.off, 0); err != nil {
		return time.Time{}, false, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(f)
	if err != nil {
		return time.Time{}, false, err
	}
	a.off += n
	data := append(a.partial, buf.Bytes()...)
	i := bytes.LastIndexByte(data, '\n')
	a.partial = append([]byte(nil), data[i+1:]...)
	for _, line := range bytes.Split(data[:i+1], []byte("\n")) {
		if !bytes.Contains(line, []byte(`"policy_reload"`)) {
			continue
		}
		var l auditLine
		if json.Unmarshal(line, &l) == nil && l.OK != nil && *l.OK {
			a.reloads[l.Revision] = l.Time
		}
	}
	at, ok := a.reloads[rev]
	return at, ok, nil
}

// check reads the whole audit log: every decision on the echo tool and
// every applied reload must be on a content written whole, with its verdict.
func check(res *result, path string, verdictOf map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("audit line is not JSON: %.200q", sc.Bytes())
		}
		switch l.Event {
		case "policy_reload":
			if l.OK != nil && *l.OK {
				res.reloads++
				if _, ok := verdictOf[l.Revision]; !ok {
					res.badReloads++
					if len(res.samples) < 5 {
						res.samples = append(res.samples, "reload to "+l.Revision+", never written whole")
					}
				}
			}
		case "decision":
			if l.Tool != "echo" {
				continue
			}
			res.decisions++
			switch l.Verdict {
			case "allow":
				res.allows++
			case "deny":
				res.denies++
			}
			if want, ok := verdictOf[l.Revision]; !ok || want != l.Verdict {
				res.mismatches++
				if len(res.samples) < 5 {
					res.samples = append(res.samples, fmt.Sprintf("decision %s under %s (rule %s): want %q", l.Verdict, l.Revision, l.Rule, want))
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if res.decisions == 0 {
		return errors.New("no decisions in the audit log")
	}
	return nil
}
