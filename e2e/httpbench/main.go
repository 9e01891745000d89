// Command httpbench measures the gate's Streamable HTTP front end with real
// processes on both sides and the load generator's HTTP client
// (e2e/loadgen):
//
//   - echo over HTTP, one call at a time and with 64 concurrent calls,
//     against the echo server's HTTP mode (e2e/echoserver -http) directly
//     and through `mcp-gate serve --http` whose upstream is that same echo
//     server as a remote ("type": "http") upstream: same client, same
//     upstream process, same run, direct and gate alternating, as
//     e2e/bench does for stdio;
//
//   - with -sessions N, N sessions of -identities users held open against
//     `serve --http --auth-tokens` (initialized, GET stream open, no
//     calls), with the gate's resident memory before, while they are held
//     and after they are deleted.
//
//     go run ./e2e/httpbench                                # pinned to one CPU, then unpinned
//     go run ./e2e/httpbench -cpu unpinned -sessions 1000   # 1,000 sessions of 10 identities
//
// Pinned means every process (this one, the gate, the echo server) runs
// under `taskset -c 0` with GOMAXPROCS unset, as in a one-CPU container.
// The gate runs under a policy that allows mcp:echo:*, with its audit log
// in a file: every call is decided and audited, which the run checks at
// its end. It is a benchmark: it prints figures and asserts none.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

type config struct {
	cpu        string
	rounds     int
	echoCalls  int
	conc       int
	concFor    time.Duration
	sessions   int
	identities int
	upstream   string
	gateBin    string
	echoBin    string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cpu, "cpu", "both", "pinned (all processes on CPU 0), unpinned, or both")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; each runs direct and gate once, in alternating order")
	flag.IntVar(&cfg.echoCalls, "echo-calls", 2000, "echo calls at c=1 per round and side")
	flag.IntVar(&cfg.conc, "c", 64, "concurrent calls of the throughput run")
	flag.DurationVar(&cfg.concFor, "c-for", 2*time.Second, "how long the throughput run lasts per round and side")
	flag.IntVar(&cfg.sessions, "sessions", 0, "instead of echo: hold this many sessions open and report the gate's memory")
	flag.IntVar(&cfg.identities, "identities", 10, "with -sessions: the sessions are spread over this many users (tokens)")
	flag.StringVar(&cfg.upstream, "upstream", "http", "the gate's upstream: http (the same echo server the direct side talks to, as a remote upstream) or stdio (a child echo server of the gate)")
	flag.StringVar(&cfg.gateBin, "gate", "", "mcp-gate binary (default: built from this checkout)")
	flag.StringVar(&cfg.echoBin, "echo", "", "echo server binary (default: built from this checkout)")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "httpbench:", err)
		os.Exit(1)
	}
}

// childEnv marks the re-executed copy of this command that measures.
const childEnv = "MCP_GATE_HTTPBENCH_CHILD"

func run(cfg config) error {
	if cfg.sessions > 0 && cfg.identities <= 0 {
		return fmt.Errorf("-identities %d: want at least 1", cfg.identities)
	}
	if cfg.upstream != "http" && cfg.upstream != "stdio" {
		return fmt.Errorf("-upstream %q: want http or stdio", cfg.upstream)
	}
	if os.Getenv(childEnv) != "" {
		if cfg.sessions > 0 {
			return holdSessions(cfg)
		}
		return measure(cfg)
	}
	dir, err := os.MkdirTemp("", "mcp-gate-httpbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := loadgen.Prepare(dir, &cfg.gateBin, &cfg.echoBin); err != nil {
		return err
	}
	return loadgen.RunModes(cfg.cpu, childEnv, []string{"-gate", cfg.gateBin, "-echo", cfg.echoBin}, "gate", "echo")
}

// proc is a started server process and the URL it serves.
type proc struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{}
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// startEcho starts the echo server's HTTP mode and reads its URL.
func startEcho(bin string, env []string) (*proc, error) {
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the echo server: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("reading the echo server's URL: %w", err)
	}
	p := &proc{cmd: cmd, url: strings.TrimSpace(line), exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

var urlLine = regexp.MustCompile(`msg="serving Streamable HTTP" url=(\S+)`)

// startGate starts `mcp-gate serve --http 127.0.0.1:0` with args and reads
// its URL from its log, which goes on to logFile.
func startGate(bin string, env []string, logFile string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the gate: %w", err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer log.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := urlLine.FindSubmatch(sc.Bytes()); m != nil {
				select {
				case found <- string(m[1]):
				default:
				}
			}
		}
		cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.url = <-found:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the gate exited before serving; its log: %s", logFile)
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("the gate printed no URL within 30s; its log: %s", logFile)
	}
}

// writeConfig writes a servers file with the echo server as "echo" (entry,
// a JSON object) and a policy that allows its tools and denies the rest.
func writeConfig(dir, entry string) (servers, policy string, err error) {
	servers = filepath.Join(dir, "servers.json")
	policy = filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(servers, []byte(`{"mcpServers":{"echo":`+entry+`}}`), 0o600); err != nil {
		return "", "", err
	}
	err = os.WriteFile(policy, []byte("version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n"), 0o600)
	return servers, policy, err
}

// side is what one target accumulated over the rounds.
type side struct {
	name  string
	url   string
	tool  string
	pid   int // the server the client talks to
	echo1 []time.Duration
	cpu1  time.Duration // that server's CPU time over the echo1 calls
	concN int
	concT time.Duration
	hwm   int
	calls int
}

func measure(cfg config) error {
	dir, err := os.MkdirTemp("", "mcp-gate-httpbench-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := loadgen.PrivateDirs(loadgen.WithoutGOMAXPROCS(os.Environ()), dir)
	echo, err := startEcho(cfg.echoBin, env)
	if err != nil {
		return err
	}
	defer echo.stop()
	entry := fmt.Sprintf(`{"type":"http","url":%q}`, echo.url)
	if cfg.upstream == "stdio" {
		entry = fmt.Sprintf(`{"command":%q}`, cfg.echoBin)
	}
	servers, policy, err := writeConfig(dir, entry)
	if err != nil {
		return err
	}
	// The audit log is not next to the policy file: the policy watcher
	// would wake at every line appended to its directory.
	auditDir := filepath.Join(dir, "audit")
	if err := os.Mkdir(auditDir, 0o700); err != nil {
		return err
	}
	audit := filepath.Join(auditDir, "audit.jsonl")
	gate, err := startGate(cfg.gateBin, env, filepath.Join(dir, "gate.log"), "--servers", servers, "--policy", policy, "--audit-log", audit)
	if err != nil {
		return err
	}
	defer gate.stop()

	// One HTTP client for both sides: the same pool of kept-alive
	// connections, the same code path.
	hc := loadgen.NewHTTPTransport(2 * cfg.conc)
	sides := []*side{
		{name: "direct", url: echo.url, tool: "echo", pid: echo.cmd.Process.Pid},
		{name: "gate", url: gate.url, tool: "echo__echo", pid: gate.cmd.Process.Pid},
	}
	start := time.Now()
	for round := range cfg.rounds {
		order := sides
		if round%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			if err := session(cfg, hc, s); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	report(os.Stdout, cfg, sides[0], sides[1], time.Since(start))
	// Every call through the gate was decided and audited.
	var decisions int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		data, err := os.ReadFile(audit)
		if err != nil {
			return err
		}
		decisions = strings.Count(string(data), `"event":"decision"`)
		if decisions >= sides[1].calls || time.Now().After(deadline) {
			break
		}
	}
	fmt.Printf("gate audit: %d decision records for %d tool calls\n", decisions, sides[1].calls)
	if decisions != sides[1].calls {
		return fmt.Errorf("the gate audited %d decisions for %d calls: the measurement is not of the gate as used", decisions, sides[1].calls)
	}
	return nil
}

// session runs the scenarios on one fresh session of s.
func session(cfg config, hc *http.Client, s *side) error {
	c := loadgen.NewHTTP(hc, s.url, "")
	if err := c.Initialize(); err != nil {
		return err
	}
	defer func() { s.calls += c.Calls(); c.Delete() }()
	if _, err := c.ListTools(); err != nil {
		return err
	}
	echo := loadgen.Call{Tool: s.tool, Args: `{"text":"hello"}`, MinBytes: len(`"hello"`)}
	if _, err := loadgen.HTTPLatency(c, echo, 50, nil); err != nil { // warm up
		return err
	}
	cpu0, err := loadgen.CPUTime(s.pid)
	if err != nil {
		return err
	}
	if s.echo1, err = loadgen.HTTPLatency(c, echo, cfg.echoCalls, s.echo1); err != nil {
		return err
	}
	cpu1, err := loadgen.CPUTime(s.pid)
	if err != nil {
		return err
	}
	s.cpu1 += cpu1 - cpu0
	n, d, err := loadgen.HTTPThroughput(c, echo, cfg.conc, cfg.concFor)
	if err != nil {
		return err
	}
	s.concN += n
	s.concT += d
	if _, hwm, err := loadgen.PeakRSS(s.pid); err == nil {
		s.hwm = max(s.hwm, hwm)
	}
	return nil
}

func report(w io.Writer, cfg config, d, g *side, took time.Duration) {
	fmt.Fprintf(w, "\nHTTP %s, gate's upstream over %s: GOMAXPROCS=%d, %d round(s) alternating direct and gate, %s, %s\n",
		cfg.cpu, cfg.upstream, runtime.GOMAXPROCS(0), cfg.rounds, runtime.GOOS+"/"+runtime.GOARCH, took.Round(time.Second))
	fmt.Fprintf(w, "| scenario | direct | gate | gate/direct |\n|---|---:|---:|---:|\n")
	us := func(t time.Duration) string { return fmt.Sprintf("%.0f µs", float64(t)/1e3) }
	if len(d.echo1) > 0 && len(g.echo1) > 0 {
		ds, gs := loadgen.Summarise(d.echo1), loadgen.Summarise(g.echo1)
		fmt.Fprintf(w, "| echo c=1 p50 | %s | %s | %.2f× |\n", us(ds.P50), us(gs.P50), float64(gs.P50)/float64(ds.P50))
		fmt.Fprintf(w, "| echo c=1 p90 | %s | %s | %.2f× |\n", us(ds.P90), us(gs.P90), float64(gs.P90)/float64(ds.P90))
		fmt.Fprintf(w, "| echo c=1 p99 | %s | %s | %.2f× |\n", us(ds.P99), us(gs.P99), float64(gs.P99)/float64(ds.P99))
		dc, gc := d.cpu1/time.Duration(len(d.echo1)), g.cpu1/time.Duration(len(g.echo1))
		fmt.Fprintf(w, "| echo c=1 server CPU per call | %.1f µs | %.1f µs | %.2f× |\n", float64(dc)/1e3, float64(gc)/1e3, float64(gc)/float64(dc))
	}
	if d.concN > 0 && g.concN > 0 {
		dr, gr := float64(d.concN)/d.concT.Seconds(), float64(g.concN)/g.concT.Seconds()
		fmt.Fprintf(w, "| echo c=%d calls/s | %.0f | %.0f | %.2f× |\n", cfg.conc, dr, gr, gr/dr)
	}
	mb := func(kb int) float64 { return float64(kb) / 1024 }
	fmt.Fprintf(w, "| peak RSS | %.1f MB | %.1f MB | |\n", mb(d.hwm), mb(g.hwm))
	fmt.Fprintf(w, "(server CPU and peak RSS are of the process the client talks to: on the gate side the gate's alone, not the echo server's behind it)\n")
}

// holdSessions holds cfg.sessions sessions of cfg.identities users against
// `serve --http --auth-tokens` and reports the gate's memory.
func holdSessions(cfg config) error {
	dir, err := os.MkdirTemp("", "mcp-gate-httpbench-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := loadgen.PrivateDirs(loadgen.WithoutGOMAXPROCS(os.Environ()), dir)
	servers, policy, err := writeConfig(dir, fmt.Sprintf(`{"command":%q}`, cfg.echoBin))
	if err != nil {
		return err
	}
	tokens, file := Tokens(cfg.identities)
	tokenFile := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokenFile, []byte(file), 0o600); err != nil {
		return err
	}
	gate, err := startGate(cfg.gateBin, env, filepath.Join(dir, "gate.log"), "--servers", servers, "--policy", policy,
		"--audit-log", filepath.Join(dir, "audit.jsonl"), "--auth-tokens", tokenFile,
		"--max-sessions", strconv.Itoa(max(1000, cfg.sessions)),
		"--max-sessions-per-user", strconv.Itoa(max(200, (cfg.sessions+cfg.identities-1)/cfg.identities)))
	if err != nil {
		return err
	}
	defer gate.stop()
	h, err := loadgen.HoldSessions(loadgen.NewHTTPTransport(64), gate.url, tokens, cfg.sessions, gate.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("\nHTTP sessions %s: GOMAXPROCS=%d, %d sessions of %d identities (initialized, GET stream open, no calls), %s\n",
		cfg.cpu, runtime.GOMAXPROCS(0), cfg.sessions, cfg.identities, runtime.GOOS+"/"+runtime.GOARCH)
	h.Print(os.Stdout)
	return nil
}

// Tokens returns n tokens and a token file that maps them to users
// user0…user{n-1}.
func Tokens(n int) ([]string, string) {
	var toks []string
	var b strings.Builder
	for i := range n {
		tok := fmt.Sprintf("httpbench-token-%04d-0123456789", i)
		toks = append(toks, tok)
		fmt.Fprintf(&b, "%s: {sub: user%d, groups: [dev]}\n", tok, i)
	}
	return toks, b.String()
}
