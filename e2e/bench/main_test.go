package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

// µs is ten latencies of n µs.
func µs(n int) []time.Duration {
	return slices.Repeat([]time.Duration{time.Duration(n) * time.Microsecond}, 10)
}

// hasRows fails t for each of rows the table lacks.
func hasRows(t *testing.T, table string, rows ...string) {
	t.Helper()
	for _, row := range rows {
		if !strings.Contains(table, row) {
			t.Errorf("the table lacks %q:\n%s", row, table)
		}
	}
}

// The normal test suite compiles the benchmark through this file and checks
// its table's arithmetic; it never runs the benchmark itself.
func TestReportVerdicts(t *testing.T) {
	d := &side{target: loadgen.Target{Name: "direct"}, echo1: µs(10), blob1: µs(1000), cold: µs(2000), echo8N: 1000, echo8T: time.Second, idleHWM: 2 << 10}
	g := &side{echo1: µs(25), blob1: µs(1500), cold: µs(6000), echo8N: 399, echo8T: time.Second, idleHWM: 15 << 10, loadHWM: 26 << 10}
	var out bytes.Buffer
	report(&out, config{cpu: "pinned", rounds: 1}, d, g, nil, time.Second)
	hasRows(t, out.String(),
		"| echo c=1 p50 | 10 µs | 25 µs | 2.50× | ≤ 2.5× | PASS |",
		"| echo c=8 calls/s | 1000 | 399 | 0.40× | ≥ 0.4× | MISS |",
		"| 1 MB c=1 p50 | 1.00 ms | 1.50 ms | 1.50× | ≤ 1.6× | PASS |",
		"| cold start p50 | 2.00 ms | 6.00 ms | 3.00× | ≤ 2.5× | MISS |",
		"| peak RSS, idle | 2.0 MB | 15.0 MB | | ≤ 15 MB | PASS |",
		"| peak RSS, 1 MB c=8 | 0.0 MB | 26.0 MB | | ≤ 25 MB | MISS |",
	)
	out.Reset()
	report(&out, config{cpu: "unpinned", rounds: 1}, d, g, nil, time.Second)
	if !strings.Contains(out.String(), "| 1.50× | ≤ 1.3× | MISS |") {
		t.Errorf("unpinned, 1 MB at 1.5× must miss its 1.3× target:\n%s", out.String())
	}
}

// With the floor measured beside the gate, the table gives each ratio and
// whether the floor itself meets each target, from the same numbers.
func TestReportWithFloor(t *testing.T) {
	d := &side{target: loadgen.Target{Name: "direct"}, echo1: µs(10), blob1: µs(1000), cold: µs(2000), echo8N: 1000, echo8T: time.Second, idleHWM: 2 << 10}
	f := &side{target: loadgen.Target{Name: "floor"}, echo1: µs(30), blob1: µs(1500), cold: µs(4000), echo8N: 380, echo8T: time.Second, idleHWM: 3 << 10, loadHWM: 9 << 10}
	g := &side{target: loadgen.Target{Name: "gate"}, echo1: µs(60), blob1: µs(3000), cold: µs(9000), echo8N: 190, echo8T: time.Second, idleHWM: 16 << 10, loadHWM: 24 << 10}
	var out bytes.Buffer
	report(&out, config{cpu: "pinned", rounds: 1}, d, g, f, time.Second)
	hasRows(t, out.String(),
		"alternating direct and floor and gate",
		"| scenario | direct | floor | gate | floor/direct | gate/direct | gate/floor | target | floor | gate |",
		"| echo c=1 p50 | 10 µs | 30 µs | 60 µs | 3.00× | 6.00× | 2.00× | ≤ 2.5× | MISS | MISS |",
		"| echo c=8 calls/s | 1000 | 380 | 190 | 0.38× | 0.19× | 0.50× | ≥ 0.4× | MISS | MISS |",
		"| 1 MB c=1 p50 | 1.00 ms | 1.50 ms | 3.00 ms | 1.50× | 3.00× | 2.00× | ≤ 1.6× | PASS | MISS |",
		"| cold start p50 | 2.00 ms | 4.00 ms | 9.00 ms | 2.00× | 4.50× | 2.25× | ≤ 2.5× | PASS | MISS |",
		"| peak RSS, idle | 2.0 MB | 3.0 MB | 16.0 MB | | | | ≤ 15 MB | PASS | MISS |",
		"| peak RSS, 1 MB c=8 | 0.0 MB | 9.0 MB | 24.0 MB | | | | ≤ 25 MB | PASS | PASS |",
	)
	for _, bad := range [][]string{
		{"-floor", "-with-floor"},
		{"-with-floor", "-base-gate", "x"},
		{"-with-floor", "-host", "modern"},
	} {
		cfg := config{host: "old", upstream: "old", cpu: "unpinned"}
		for i := 0; i < len(bad); i++ {
			switch bad[i] {
			case "-floor":
				cfg.floor = true
			case "-with-floor":
				cfg.withFloor = true
			case "-base-gate":
				i++
				cfg.baseGate = bad[i]
			case "-host":
				i++
				cfg.host = bad[i]
			}
		}
		if err := run(cfg); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// Over a cycle of rounds, each side runs in each position, and right after
// each other side, equally often.
func TestBalancedOrders(t *testing.T) {
	for n, orders := range balancedOrders {
		pos := map[[2]int]int{}  // side, position
		next := map[[2]int]int{} // side, the side right after it
		for _, o := range orders {
			if len(o) != n {
				t.Fatalf("%d sides: order %v", n, o)
			}
			for i, s := range o {
				pos[[2]int{s, i}]++
				if i > 0 {
					next[[2]int{o[i-1], s}]++
				}
			}
		}
		for a := range n {
			for b := range n {
				if want := len(orders) / n; pos[[2]int{a, b}] != want {
					t.Errorf("%d sides: side %d in position %d %d times; want %d", n, a, b, pos[[2]int{a, b}], want)
				}
				if want := len(orders) * (n - 1) / (n * (n - 1)); a != b && next[[2]int{a, b}] != want {
					t.Errorf("%d sides: side %d right after side %d %d times; want %d", n, b, a, next[[2]int{a, b}], want)
				}
			}
		}
	}
}

// A scenario the floor's side did not measure prints nothing for it, not
// a zero, an infinite ratio or a verdict.
func TestReportFloorNotMeasured(t *testing.T) {
	d := &side{target: loadgen.Target{Name: "direct"}, idleHWM: 2 << 10, loadHWM: 12 << 10}
	f := &side{target: loadgen.Target{Name: "floor"}, idleHWM: 3 << 10}
	g := &side{target: loadgen.Target{Name: "gate"}, idleHWM: 16 << 10, loadHWM: 24 << 10}
	var out bytes.Buffer
	report(&out, config{cpu: "pinned", rounds: 1}, d, g, f, time.Second)
	hasRows(t, out.String(), "| peak RSS, 1 MB c=8 | 12.0 MB | | 24.0 MB | | | | ≤ 25 MB | | PASS |")
}

// TestHostModes runs the modern modes once, briefly, through real
// processes: the echo server answering a 2026-07-28 client directly, and
// the gate driven as a 2026-07-28 host, in front of the echo server at
// either era, against the gate driven as a 2025-11-25 host. It times
// nothing; it checks that every side answers complete results, that each
// client speaks the era it is set to, and that the gate decided every call.
func TestHostModes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gate")
	}
	dir := t.TempDir()
	var gateBin, echoBin string
	if err := loadgen.BuildMissing(dir, &gateBin, &echoBin); err != nil {
		t.Fatal(err)
	}
	if err := run(config{host: "ancient", upstream: "old"}); err == nil || !strings.Contains(err.Error(), `-host "ancient"`) {
		t.Errorf("-host ancient: %v", err)
	}
	for _, upstream := range []string{"old", "modern"} {
		t.Run("upstream-"+upstream, func(t *testing.T) {
			run := t.TempDir()
			cfg := config{host: "modern", baseHost: "", upstream: upstream, gateBin: gateBin, echoBin: echoBin, cpu: "unpinned"}
			direct, gate, _, err := targets(cfg, run)
			if err != nil {
				t.Fatal(err)
			}
			if !direct.Modern || !gate.Modern {
				t.Fatalf("-host modern: direct modern %v, gate modern %v", direct.Modern, gate.Modern)
			}
			servers, _ := os.ReadFile(filepath.Join(run, "servers.json"))
			if pinned := strings.Contains(string(servers), `"protocol":"2026-07-28"`); pinned != (upstream == "modern") {
				t.Fatalf("-upstream %s: servers file %s", upstream, servers)
			}
			for _, tg := range []loadgen.Target{direct, gate} {
				c, err := tg.Open()
				if err != nil {
					t.Fatal(err)
				}
				if !c.Modern() {
					t.Errorf("%s: the client did not open as a 2026-07-28 host", tg.Name)
				}
				if _, err := loadgen.Latency(c, tg.Echo(), 5, nil); err != nil {
					t.Fatalf("%s: %v", tg.Name, err)
				}
				if err := c.Pipeline(tg.Echo(), 8, 40); err != nil {
					t.Fatalf("%s: %v", tg.Name, err)
				}
				if err := c.Call(tg.Blob(1 << 16)); err != nil {
					t.Fatalf("%s: %v", tg.Name, err)
				}
				c.Close()
			}
			audit, _ := filepath.Glob(filepath.Join(run, "audit-gate", "*.jsonl"))
			var decisions int
			for _, f := range audit {
				data, _ := os.ReadFile(f)
				decisions += strings.Count(string(data), `"event":"decision"`)
			}
			if decisions != 5+40+1 {
				t.Errorf("the gate audited %d decisions for 46 calls", decisions)
			}
		})
	}
	// One gate, both eras of host: -base-host old with -base-gate.
	cfg := config{host: "modern", baseHost: "old", upstream: "old", gateBin: gateBin, baseGate: gateBin, echoBin: echoBin}
	base, gate, _, err := targets(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if base.Modern || !gate.Modern || base.Name != "base" {
		t.Fatalf("-base-host old: base %s modern %v, gate modern %v", base.Name, base.Modern, gate.Modern)
	}
	c, err := base.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Modern() {
		t.Error("the baseline opened as a 2026-07-28 host under -base-host old")
	}
	if err := c.Call(base.Echo()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, cfg, &side{target: base}, &side{target: gate}, nil, time.Second)
	if want := "host protocol: base 2025-11-25, gate 2026-07-28; the gate speaks 2025-11-25 to the echo server"; !strings.Contains(out.String(), want) {
		t.Errorf("the table does not say which era each side speaks (%q):\n%s", want, out.String())
	}
	out.Reset()
	report(&out, config{cpu: "pinned", rounds: 1, host: "old", upstream: "old"}, &side{target: loadgen.Target{Name: "direct"}}, &side{}, nil, time.Second)
	if strings.Contains(out.String(), "host protocol") {
		t.Errorf("the default table names eras:\n%s", out.String())
	}
}
