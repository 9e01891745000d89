// Command bench measures the mcp-gate binary against a direct connection,
// with real processes on both sides: the load generator's light client
// (e2e/loadgen) drives the echo server (e2e/echoserver) either directly or
// through the gate, in alternating runs so that drift on a shared machine
// falls on both sides alike, and prints the ratios next to issue 9's
// targets. It is a benchmark: a MISS is news, never a failure.
//
//	go run ./e2e/bench                 # pinned to one CPU, then unpinned
//	go run ./e2e/bench -cpu pinned -rounds 1 -profile /tmp/prof
//	go run ./e2e/bench -with-floor                  # and e2e/minrelay beside them
//	go run ./e2e/bench -with-floor -floor-relay c   # and e2e/crelay, no runtime
//
// The floor is a relay that only copies lines: what a relay process costs
// on the machine before any work of the gate's. e2e/minrelay is that relay
// on Go's netpoller, as the gate reads and writes, or with -floor-relay
// go-blocking in blocking system calls, a thread each way (the other I/O
// mode open to a Go gate), or with -floor-relay go-checks doing the gate's
// work on each call (decision, audit record, rename, guard) with the
// gate's packages and none of its structure; e2e/crelay (C, two threads in blocking read and
// write) is the least any relay process can cost, so that a target it
// misses is out of reach of every relay there.
//
// Pinned means every process (this one, the gate, the echo server) runs
// under `taskset -c 0` with GOMAXPROCS unset, so Go picks 1, as in a
// one-CPU container. The gate runs under a policy that allows mcp:echo:*,
// with its audit log in a file and its result guard on: every call is
// decided, audited and guarded, as in use.
//
// -host modern drives both sides as a 2026-07-28 host (no initialize, the
// _meta envelope in every request; the echo server answers such a client
// as that revision's server does), -upstream modern has the gate speak
// 2026-07-28 to the echo server (its entry pinned), and -base-host sets the
// baseline's host apart, so that one gate can be compared with itself
// driven by the two eras of host:
//
//	go run ./e2e/bench -host modern -only echo1,echo8          # against direct, both modern
//	go run ./e2e/bench -host modern -upstream modern -only echo1,echo8
//	go run ./e2e/bench -host modern -base-host old -base-gate G -gate G -only echo1,echo8
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

type config struct {
	cpu       string
	rounds    int
	echoCalls int
	blobCalls int
	c8        time.Duration
	blob8     int
	cold      int
	gateBin   string
	baseGate  string
	floor     bool
	withFloor bool   // measure the floor relay as a third side in the same rounds
	auditNext bool   // the gates' audit logs in the policy's directory
	floorBin  string // e2e/minrelay, for -floor and -with-floor
	floorLang string // go, go-blocking (e2e/minrelay) or c (e2e/crelay)
	echoBin   string
	profile   string
	trace     bool
	only      string
	host      string // old or modern: the era the client speaks to the gate
	baseHost  string // the same for the baseline ("": as host)
	upstream  string // old or modern: the era the gate speaks to the echo server
}

func main() {
	var cfg config
	flag.StringVar(&cfg.cpu, "cpu", "both", "pinned (all processes on CPU 0), unpinned, or both")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds; each runs every side once, in an order that changes from round to round (two sides alternate; three take six orders in turn, and -with-floor makes the default 6)")
	flag.IntVar(&cfg.echoCalls, "echo-calls", 2000, "echo calls at c=1 per round and side")
	flag.IntVar(&cfg.blobCalls, "blob-calls", 40, "1 MB calls at c=1 per round and side")
	flag.DurationVar(&cfg.c8, "c8", time.Second, "how long echo runs with 8 outstanding calls per round and side")
	flag.IntVar(&cfg.blob8, "blob8-calls", 48, "1 MB calls with 8 outstanding per round and side (for the gate's peak memory)")
	flag.IntVar(&cfg.cold, "cold", 8, "cold starts per round and side")
	flag.StringVar(&cfg.gateBin, "gate", "", "mcp-gate binary (default: built from this checkout)")
	flag.StringVar(&cfg.baseGate, "base-gate", "", "compare with this mcp-gate binary instead of the direct connection (a before/after run; the targets then do not apply)")
	flag.BoolVar(&cfg.floor, "floor", false, "measure e2e/minrelay (copies lines, no parsing, policy, audit or guard) in the gate's place: what any relay process costs here, against which the gate's targets can be read")
	flag.BoolVar(&cfg.withFloor, "with-floor", false, "measure e2e/minrelay as a third side in the same rounds as the direct connection and the gate: the table then gives the floor's ratios, the gate's ratio to the floor (what the gate costs beyond any relay) and whether the floor itself meets each target")
	flag.BoolVar(&cfg.auditNext, "audit-beside-policy", false, "write each gate's audit log in the policy file's directory, as a deployment that keeps them together does (by default it is elsewhere: the policy watch sees that directory)")
	flag.StringVar(&cfg.floorBin, "minrelay", "", "floor relay binary for -floor and -with-floor (default: built from this checkout, as -floor-relay says)")
	flag.StringVar(&cfg.floorLang, "floor-relay", "go", "the floor relay: go (e2e/minrelay, on Go's netpoller as the gate), go-blocking (e2e/minrelay -blocking: a goroutine and its thread each way in blocking read and write, the other I/O mode open to a Go gate; Linux) go-checks (e2e/minrelay -checks: the gate's work on each call, decision, audit record before forwarding, rename and result guard, by the gate's own packages, without the gate's structure) or c (e2e/crelay/crelay.c, two threads in blocking read and write, no runtime: the least any relay process costs here; needs a C compiler); -minrelay gives its binary")
	flag.StringVar(&cfg.echoBin, "echo", "", "echo server binary (default: built from this checkout)")
	flag.StringVar(&cfg.profile, "profile", "", "write a CPU profile of each gate process into this directory (go tool pprof GATE DIR/*.pprof)")
	flag.BoolVar(&cfg.trace, "trace", false, "with -profile, also write an execution trace of each gate process (go tool trace -pprof=sched DIR/X.trace)")
	flag.StringVar(&cfg.only, "only", "", "run only these scenarios, comma-separated: echo1, echo8, blob1, blob8, up1, cold (up1: 1 MB each way, an echo of a 1 MB argument, at c=1)")
	flag.StringVar(&cfg.host, "host", "old", "the host the client plays: old (2025-11-25, initialize) or modern (2026-07-28: discover, the _meta envelope in every request)")
	flag.StringVar(&cfg.baseHost, "base-host", "", "the host the client plays on the baseline side (default: as -host); with -base-gate the same binary as -gate, it compares the two eras of host through one gate")
	flag.StringVar(&cfg.upstream, "upstream", "old", "the protocol the gate speaks to the echo server: old (2025-11-25) or modern (its entry pinned to 2026-07-28)")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// pinnedEnv marks the re-executed copy of this command that runs pinned.
const pinnedEnv = "MCP_GATE_BENCH_CHILD"

func run(cfg config) error {
	// Three sides take six orders: fewer rounds than that, unless asked
	// for, would leave the design's balance unmet (here, before the
	// re-executed copy measures: it gets only the flags that were set).
	if cfg.withFloor {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rounds" })
		if !set {
			cfg.rounds = len(balancedOrders[3])
		}
	}
	if os.Getenv(pinnedEnv) != "" {
		return measure(cfg)
	}
	// Every flag is checked before anything is built.
	if cfg.floor && cfg.withFloor {
		return fmt.Errorf("-floor measures the floor in the gate's place, -with-floor beside it: choose one")
	}
	if cfg.withFloor && cfg.baseGate != "" {
		return fmt.Errorf("-with-floor compares with the direct connection: it does not go with -base-gate")
	}
	for name, v := range map[string]string{"host": cfg.host, "base-host": cfg.baseHost, "upstream": cfg.upstream} {
		if v != "old" && v != "modern" && (v != "" || name != "base-host") {
			return fmt.Errorf("-%s %q: want old or modern", name, v)
		}
	}
	if (cfg.floor || cfg.withFloor) && (cfg.host == "modern" || cfg.upstream == "modern") {
		return fmt.Errorf("the floor relays lines as they are: it has no era of its own to compare (use -host old -upstream old)")
	}
	switch cfg.floorLang {
	case "go", "go-blocking", "go-checks", "c":
	default:
		return fmt.Errorf("-floor-relay %q: want go, go-blocking, go-checks or c", cfg.floorLang)
	}
	for _, s := range strings.Split(cfg.only, ",") {
		switch s {
		case "", "echo1", "echo8", "blob1", "blob8", "up1", "cold":
		default:
			return fmt.Errorf("-only %q: want a comma-separated list of echo1, echo8, blob1, blob8, up1, cold", cfg.only)
		}
	}
	dir, err := os.MkdirTemp("", "mcp-gate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Binaries given are measured as installed, not as a linker may just
	// have left them (loadgen.Install); those built here are copied too.
	if err := loadgen.InstallInto(dir, &cfg.gateBin, &cfg.baseGate, &cfg.echoBin, &cfg.floorBin); err != nil {
		return err
	}
	if (cfg.floor || cfg.withFloor) && cfg.floorBin == "" {
		if cfg.floorLang == "c" {
			cfg.floorBin = filepath.Join(dir, "crelay")
			err = loadgen.BuildC(cfg.floorBin, "e2e/crelay/crelay.c")
		} else {
			cfg.floorBin = filepath.Join(dir, "minrelay")
			err = loadgen.Build(cfg.floorBin, "e2e/minrelay")
		}
		if err != nil {
			return err
		}
	}
	if cfg.floor {
		cfg.gateBin = cfg.floorBin
	}
	if err := loadgen.BuildMissing(dir, &cfg.gateBin, &cfg.echoBin); err != nil {
		return err
	}
	return loadgen.RunModes(cfg.cpu, pinnedEnv, []string{"-gate", cfg.gateBin, "-base-gate", cfg.baseGate, "-echo", cfg.echoBin, "-minrelay", cfg.floorBin, "-floor=" + fmt.Sprint(cfg.floor)}, "gate", "base-gate", "echo", "minrelay", "floor")
}

// balancedOrders are, per number of sides, the orders the rounds take in
// turn: for three, a Williams design, in which every side comes first,
// second and third twice and right after every other side twice.
var balancedOrders = map[int][][]int{
	2: {{0, 1}, {1, 0}},
	3: {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}, {0, 2, 1}, {1, 0, 2}},
}

// side is what one target accumulated over the rounds.
type side struct {
	target    loadgen.Target
	echo1     []time.Duration
	echo1CPU  time.Duration // the server's CPU time over the echo1 calls
	blob1     []time.Duration
	up1       []time.Duration // 1 MB each way: host to upstream as well
	cold      []time.Duration
	echo8N    int
	echo8T    time.Duration
	echo8CPU  time.Duration // the server's CPU time over the echo8 calls
	blob8N    int
	blob8T    time.Duration
	idleHWM   int // KiB, the largest over the rounds
	loadHWM   int
	processes int
	calls     int // tools/call requests sent, warm-ups and cold starts included
}

func measure(cfg config) error {
	dir, err := os.MkdirTemp("", "mcp-gate-bench-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base, gate, floor, err := targets(cfg, dir)
	if err != nil {
		return err
	}
	want := func(s string) bool {
		return cfg.only == "" || strings.Contains(","+cfg.only+",", ","+s+",")
	}
	sides := []*side{{target: base}, {target: gate}}
	if floor != nil {
		sides = append(sides, &side{target: *floor})
	}
	start := time.Now()
	for round := range cfg.rounds {
		// The order changes from round to round so that drift on a shared
		// machine, and whatever the side before left behind (its page
		// cache writeback, the CPU caches), falls on every side alike:
		// over len(orders) rounds each side runs in each position, and
		// right after each other side, equally often.
		orders := balancedOrders[len(sides)]
		var order []*side
		for _, i := range orders[round%len(orders)] {
			order = append(order, sides[i])
		}
		for _, s := range order {
			if err := session(cfg, s, want); err != nil {
				return err
			}
		}
		if want("cold") {
			// Interleave the cold starts one by one.
			for i := range len(order) * cfg.cold {
				s := order[i%len(order)]
				d, err := loadgen.ColdStart(s.target, s.target.Echo())
				if err != nil {
					return err
				}
				s.cold = append(s.cold, d)
				s.calls++
			}
		}
	}
	var floorSide *side
	if floor != nil {
		floorSide = sides[2]
	}
	report(os.Stdout, cfg, sides[0], sides[1], floorSide, time.Since(start))
	// Nothing was switched off: every call through a gate was decided and
	// audited.
	for _, s := range sides {
		if s.target.Name == "direct" || s.target.Name == "floor" {
			continue // nothing to audit
		}
		decisions := 0
		files, _ := filepath.Glob(filepath.Join(dir, "audit-"+s.target.Name, "*.jsonl"))
		beside, _ := filepath.Glob(filepath.Join(dir, "audit-"+s.target.Name+"-*.jsonl"))
		files = append(files, beside...)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			decisions += strings.Count(string(data), `"event":"decision"`)
		}
		fmt.Printf("%s audit: %d decision records for %d tool calls\n", s.target.Name, decisions, s.calls)
		if decisions != s.calls {
			return fmt.Errorf("%s audited %d decisions for %d calls: the measurement is not of the gate as used", s.target.Name, decisions, s.calls)
		}
	}
	return nil
}

// session runs the warm scenarios on one fresh process of s.
func session(cfg config, s *side, want func(string) bool) error {
	c, err := s.target.Open()
	if err != nil {
		return err
	}
	defer func() { s.calls += c.Calls(); c.Close() }()
	s.processes++
	echo, blob := s.target.Echo(), s.target.Blob(1<<20)
	if _, err := loadgen.Latency(c, echo, 50, nil); err != nil { // warm up
		return err
	}
	if _, hwm, err := loadgen.PeakRSS(c.Pid()); err == nil {
		s.idleHWM = max(s.idleHWM, hwm)
	}
	if want("echo1") {
		cpu0, err := loadgen.CPUTime(c.Pid())
		if err != nil {
			return err
		}
		if s.echo1, err = loadgen.Latency(c, echo, cfg.echoCalls, s.echo1); err != nil {
			return err
		}
		cpu1, err := loadgen.CPUTime(c.Pid())
		if err != nil {
			return err
		}
		s.echo1CPU += cpu1 - cpu0
	}
	if want("echo8") {
		cpu0, err := loadgen.CPUTime(c.Pid())
		if err != nil {
			return err
		}
		n, d, err := loadgen.Throughput(c, echo, 8, cfg.c8)
		if err != nil {
			return err
		}
		cpu1, err := loadgen.CPUTime(c.Pid())
		if err != nil {
			return err
		}
		s.echo8N += n
		s.echo8T += d
		s.echo8CPU += cpu1 - cpu0
	}
	if want("blob1") {
		if _, err := loadgen.Latency(c, blob, 2, nil); err != nil { // warm up
			return err
		}
		if s.blob1, err = loadgen.Latency(c, blob, cfg.blobCalls, s.blob1); err != nil {
			return err
		}
	}
	if want("blob8") {
		t0 := time.Now()
		if err := c.Pipeline(blob, 8, cfg.blob8); err != nil {
			return err
		}
		s.blob8T += time.Since(t0)
		s.blob8N += cfg.blob8
		if _, hwm, err := loadgen.PeakRSS(c.Pid()); err == nil {
			s.loadHWM = max(s.loadHWM, hwm)
		}
	}
	// Last: a peak of 1 MB requests is not the one the 1 MB c=8 target is
	// about, and the peak RSS read above is the process's highest so far.
	if want("up1") {
		up := loadgen.Call{Tool: s.target.Tool("echo"), Args: `{"text":"` + strings.Repeat("x", 1<<20) + `"}`, MinBytes: 1 << 20}
		if _, err := loadgen.Latency(c, up, 2, nil); err != nil { // warm up
			return err
		}
		if s.up1, err = loadgen.Latency(c, up, cfg.blobCalls, s.up1); err != nil {
			return err
		}
	}
	return nil
}

// targets returns the baseline (the echo server directly, or -base-gate),
// the gate and, with -with-floor, the floor relay.
func targets(cfg config, dir string) (base, gate loadgen.Target, floor *loadgen.Target, err error) {
	env := loadgen.PrivateDirs(loadgen.WithoutGOMAXPROCS(os.Environ()), dir)
	servers := filepath.Join(dir, "servers.json")
	policy := filepath.Join(dir, "policy.yaml")
	pin := ""
	if cfg.upstream == "modern" {
		pin = `,"protocol":"2026-07-28"`
	}
	if err := os.WriteFile(servers, fmt.Appendf(nil, `{"mcpServers":{"echo":{"command":%q%s}}}`, cfg.echoBin, pin), 0o600); err != nil {
		return base, gate, nil, err
	}
	// Every echo call is decided by a rule; everything else is denied.
	if err := os.WriteFile(policy, []byte("version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n"), 0o600); err != nil {
		return base, gate, nil, err
	}
	if cfg.profile != "" {
		if err := os.MkdirAll(cfg.profile, 0o755); err != nil {
			return base, gate, nil, err
		}
	}
	// The gates' own log (info and up, the default) goes to a file, as a
	// host would keep it. The file stays open for the run.
	stderr, err := os.OpenFile(filepath.Join(dir, "gate-stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return base, gate, nil, err
	}
	baseHost := cfg.baseHost
	if baseHost == "" {
		baseHost = cfg.host
	}
	gateTarget := func(name, bin string, modern bool) (loadgen.Target, error) {
		// The audit log is not next to the policy file unless asked: a
		// policy watch that wakes at every line appended to its directory
		// (fsnotify's, on macOS and Windows) would be measured with it.
		auditDir := filepath.Join(dir, "audit-"+name)
		if err := os.Mkdir(auditDir, 0o700); err != nil {
			return loadgen.Target{}, err
		}
		n := 0
		return loadgen.Target{
			Name: name,
			Command: func() *exec.Cmd {
				n++
				audit := filepath.Join(auditDir, fmt.Sprintf("audit-%d.jsonl", n))
				if cfg.auditNext {
					audit = filepath.Join(dir, fmt.Sprintf("audit-%s-%d.jsonl", name, n))
				}
				cmd := exec.Command(bin, "serve", "--servers", servers, "--policy", policy, "--audit-log", audit)
				cmd.Env = env
				if cfg.profile != "" {
					prefix := filepath.Join(cfg.profile, fmt.Sprintf("%s-%s-%d", name, cfg.cpu, n))
					cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "MCP_GATE_CPUPROFILE="+prefix+".pprof")
					if cfg.trace {
						cmd.Env = append(cmd.Env, "MCP_GATE_TRACE="+prefix+".trace")
					}
				}
				cmd.Stderr = stderr
				return cmd
			},
			Tool:   func(s string) string { return "echo__" + s },
			Modern: modern,
		}, nil
	}
	floorStarts := 0
	floorTarget := loadgen.Target{
		Name: "floor",
		Command: func() *exec.Cmd {
			args := []string{"-strip", "echo__", "--", cfg.echoBin}
			switch cfg.floorLang {
			case "go-blocking":
				args = append([]string{"-blocking"}, args...)
			case "go-checks":
				floorStarts++
				audit := filepath.Join(dir, fmt.Sprintf("audit-floor-%d.jsonl", floorStarts))
				args = append([]string{"-checks", policy, "-audit", audit}, args...)
			}
			cmd := exec.Command(cfg.floorBin, args...)
			cmd.Env = env
			cmd.Stderr = stderr
			return cmd
		},
		Tool: func(s string) string { return "echo__" + s },
	}
	if cfg.floor {
		gate = floorTarget
	} else if gate, err = gateTarget("gate", cfg.gateBin, cfg.host == "modern"); err != nil {
		return base, gate, nil, err
	}
	if cfg.withFloor {
		floor = &floorTarget
	}
	if cfg.baseGate != "" {
		base, err = gateTarget("base", cfg.baseGate, baseHost == "modern")
		return base, gate, floor, err
	}
	base = loadgen.Target{
		Name: "direct",
		Command: func() *exec.Cmd {
			cmd := exec.Command(cfg.echoBin)
			cmd.Env = env
			return cmd
		},
		Tool:   func(s string) string { return s },
		Modern: baseHost == "modern",
	}
	return base, gate, floor, nil
}

// report prints the table of one CPU mode: each scenario for the
// baseline d and the gate g, g's ratio to d and, where the issue sets one,
// its target and whether g meets it. With f, the floor relay measured in
// the same rounds (-with-floor), the table has f's column too, f's and g's
// ratios to d, g's ratio to f (what the gate costs beyond any relay) and
// whether f meets each target: a target the floor misses is one no relay
// meets on this machine.
func report(w io.Writer, cfg config, d, g, f *side, took time.Duration) {
	pinned := cfg.cpu == "pinned"
	sides := []*side{d, g}
	if f != nil {
		sides = []*side{d, f, g}
	}
	names := make([]string, len(sides))
	for i, s := range sides {
		names[i] = s.target.Name
	}
	fmt.Fprintf(w, "\n%s: GOMAXPROCS=%d, %d round(s) alternating %s, %s, %s\n",
		cfg.cpu, runtime.GOMAXPROCS(0), cfg.rounds, strings.Join(names, " and "), runtime.GOOS+"/"+runtime.GOARCH, took.Round(time.Second))
	if e := eras(cfg, d, g); e != "" {
		fmt.Fprintln(w, e)
	}
	bn, gn := d.target.Name, g.target.Name
	if f == nil {
		fmt.Fprintf(w, "| scenario | %s | %s | %s/%s | target | |\n|---|---:|---:|---:|---:|---|\n", bn, gn, gn, bn)
	} else {
		fn := f.target.Name
		fmt.Fprintf(w, "| scenario | %s | %s | %s | %s/%s | %s/%s | %s/%s | target | %s | %s |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
			bn, fn, gn, fn, bn, gn, bn, gn, fn, fn, gn)
	}
	limit1MB := 1.3
	if pinned {
		limit1MB = 1.6
	}
	for _, m := range metrics(limit1MB) {
		gv, ok := m.value(g)
		if !ok {
			continue
		}
		dv, dok := m.value(d)
		if m.ratio && !dok {
			continue
		}
		cells := []string{m.name}
		for _, s := range sides {
			v, _ := m.value(s)
			cells = append(cells, m.format(v))
		}
		ratio := func(a, b float64) string {
			if !m.ratio {
				return ""
			}
			return fmt.Sprintf("%.2f×", a/b)
		}
		verdict := func(v float64) string {
			switch {
			case m.meets == nil:
				return ""
			case !m.absolute && bn != "direct":
				return "" // the targets are ratios to the direct connection
			case m.meets(v, v/dv):
				return "PASS"
			default:
				return "MISS"
			}
		}
		if f == nil {
			cells = append(cells, ratio(gv, dv), m.target, verdict(gv))
		} else {
			if fv, fok := m.value(f); fok {
				cells = append(cells, ratio(fv, dv), ratio(gv, dv), ratio(gv, fv), m.target, verdict(fv), verdict(gv))
			} else {
				cells[2] = "" // not measured on the floor's side
				cells = append(cells, "", ratio(gv, dv), "", m.target, "", verdict(gv))
			}
		}
		line := "|"
		for _, c := range cells {
			if c != "" {
				line += " " + c
			}
			line += " |"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "(server CPU and peak RSS are of the process the client talks to: on the gate side the gate's alone, not its upstream's)\n")
}

// metric is one row of the table.
type metric struct {
	name   string
	value  func(s *side) (float64, bool) // false: not measured in this run
	format func(v float64) string
	ratio  bool   // the row shows ratios between the sides
	target string // the target, as printed
	// meets says whether a side's value v, whose ratio to the baseline is
	// r, meets the target; nil where there is none.
	meets    func(v, r float64) bool
	absolute bool // the target is on the side's own value, not a ratio
}

// metrics are the table's rows, in order; limit1MB is the 1 MB target of
// the CPU mode.
func metrics(limit1MB float64) []metric {
	us := func(v float64) string { return fmt.Sprintf("%.0f µs", v/1e3) }
	usFine := func(v float64) string { return fmt.Sprintf("%.1f µs", v/1e3) }
	ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v/1e6) }
	rate := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	mb := func(v float64) string { return fmt.Sprintf("%.1f MB", v/1024) }
	pct := func(lat func(*side) []time.Duration, p func(loadgen.Stats) time.Duration) func(*side) (float64, bool) {
		return func(s *side) (float64, bool) {
			if len(lat(s)) == 0 {
				return 0, false
			}
			return float64(p(loadgen.Summarise(lat(s)))), true
		}
	}
	echo1 := func(s *side) []time.Duration { return s.echo1 }
	blob1 := func(s *side) []time.Duration { return s.blob1 }
	up1 := func(s *side) []time.Duration { return s.up1 }
	cold := func(s *side) []time.Duration { return s.cold }
	p50 := func(x loadgen.Stats) time.Duration { return x.P50 }
	p90 := func(x loadgen.Stats) time.Duration { return x.P90 }
	p99 := func(x loadgen.Stats) time.Duration { return x.P99 }
	atMost := func(l float64) func(v, r float64) bool { return func(_, r float64) bool { return r <= l } }
	return []metric{
		{name: "echo c=1 p50", value: pct(echo1, p50), format: us, ratio: true, target: "≤ 2.5×", meets: atMost(2.5)},
		{name: "echo c=1 p90", value: pct(echo1, p90), format: us, ratio: true},
		{name: "echo c=1 p99", value: pct(echo1, p99), format: us, ratio: true},
		{name: "echo c=1 server CPU per call", format: usFine,
			value: func(s *side) (float64, bool) {
				if len(s.echo1) == 0 {
					return 0, false
				}
				return float64(s.echo1CPU) / float64(len(s.echo1)), true
			}},
		{name: "echo c=8 calls/s", format: rate, ratio: true, target: "≥ 0.4×", meets: func(_, r float64) bool { return r >= 0.4 },
			value: func(s *side) (float64, bool) { return float64(s.echo8N) / s.echo8T.Seconds(), s.echo8N > 0 }},
		// Pinned, every process shares one CPU, so 1/(calls/s) is the CPU
		// per call of all of them: less the relay's own, what the client
		// and the server spend per call behind a relay.
		{name: "echo c=8 server CPU per call", format: usFine,
			value: func(s *side) (float64, bool) {
				if s.echo8N == 0 {
					return 0, false
				}
				return float64(s.echo8CPU) / float64(s.echo8N), true
			}},
		{name: "1 MB c=1 p50", value: pct(blob1, p50), format: ms, ratio: true, target: fmt.Sprintf("≤ %.1f×", limit1MB), meets: atMost(limit1MB)},
		{name: "1 MB c=1 p90", value: pct(blob1, p90), format: ms, ratio: true},
		{name: "1 MB c=1 p99", value: pct(blob1, p99), format: ms, ratio: true},
		{name: "1 MB each way c=1 p50", value: pct(up1, p50), format: ms, ratio: true},
		{name: "1 MB each way c=1 p90", value: pct(up1, p90), format: ms, ratio: true},
		{name: "1 MB each way c=1 p99", value: pct(up1, p99), format: ms, ratio: true},
		{name: "1 MB c=8 calls/s", format: rate, ratio: true,
			value: func(s *side) (float64, bool) { return float64(s.blob8N) / s.blob8T.Seconds(), s.blob8N > 0 }},
		{name: "cold start p50", value: pct(cold, p50), format: ms, ratio: true, target: "≤ 2.5×", meets: atMost(2.5)},
		// A side's memory is read in every session, after its warm-up.
		{name: "peak RSS, idle", format: mb, target: "≤ 15 MB", absolute: true,
			meets: func(v, _ float64) bool { return v > 0 && v <= 15*1024 },
			value: func(s *side) (float64, bool) { return float64(s.idleHWM), true }},
		{name: "peak RSS, 1 MB c=8", format: mb, target: "≤ 25 MB", absolute: true,
			meets: func(v, _ float64) bool { return v <= 25*1024 },
			value: func(s *side) (float64, bool) { return float64(s.loadHWM), s.loadHWM > 0 }},
	}
}

// eras says which protocol each side's client and the gate's upstream
// speak, when any is not the default (2025-11-25 throughout).
func eras(cfg config, d, g *side) string {
	if !d.target.Modern && !g.target.Modern && cfg.upstream != "modern" {
		return ""
	}
	era := func(modern bool) string {
		if modern {
			return "2026-07-28"
		}
		return "2025-11-25"
	}
	up := "2025-11-25"
	if cfg.upstream == "modern" {
		up = "2026-07-28"
	}
	return fmt.Sprintf("host protocol: %s %s, %s %s; the gate speaks %s to the echo server", d.target.Name, era(d.target.Modern), g.target.Name, era(g.target.Modern), up)
}
