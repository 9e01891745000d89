package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/oneproc"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// procsChild, in the environment of a re-run of this test binary, makes
// TestMain report the Ps the process has after the initialisers and after
// procsFor, instead of running the tests.
const procsChild = "MCP_GATE_TEST_PROCS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(mainstackChildEnv) != "" {
		moved, by := stackMovedInInit() // mainstack_test.go
		fmt.Printf("moved=%t by=%d\n", moved, by)
		os.Exit(0)
	}
	if kind := os.Getenv(procsChild); kind != "" {
		init := runtime.GOMAXPROCS(0)
		procsFor(kind == "stdio")
		fmt.Printf("start=%d init=%d after=%d group=%t\n", oneproc.AtStart(), init, runtime.GOMAXPROCS(0), rpc.GroupingBursts())
		os.Exit(0)
	}
	// The test binary starts on one P too: the tests get what every
	// command but a stdio session gets.
	procsFor(false)
	os.Exit(m.Run())
}

// procsIn runs this test binary as a child, with env instead of any
// GOMAXPROCS of this process's environment, and reports its Ps:
// what the runtime started with, what the initialisers left, and what
// procsFor(kind == "stdio") set.
func procsIn(t *testing.T, kind string, env ...string) (start, init, after int) {
	t.Helper()
	start, init, after, _ = procsGroupIn(t, kind, env...)
	return start, init, after
}

// procsGroupIn is procsIn that also reports whether the child gathers the
// writes of a burst (rpc.GroupingBursts) once procsFor has run.
func procsGroupIn(t *testing.T, kind string, env ...string) (start, init, after int, group bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, procsChild+"="+kind)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if _, err := fmt.Sscanf(string(out), "start=%d init=%d after=%d group=%t", &start, &init, &after, &group); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	return start, init, after, group
}

// The process runs its initialisers on one P; a stdio session keeps it,
// every other command gets the runtime's default back, and GOMAXPROCS in
// the environment wins for both.
func TestProcsFor(t *testing.T) {
	t.Parallel()
	start, init, after := procsIn(t, "stdio")
	if init != 1 || after != 1 {
		t.Fatalf("a stdio session: %d Ps after the initialisers and %d after procsFor; want 1 and 1", init, after)
	}
	if start < 2 {
		t.Skipf("the runtime's default here is %d P: giving it back cannot be told from keeping one", start)
	}
	if _, init, after := procsIn(t, "other"); init != 1 || after != start {
		t.Fatalf("another command: %d Ps after the initialisers and %d after procsFor; want 1 and the default, %d", init, after, start)
	}
	for _, kind := range []string{"stdio", "other"} {
		if start, _, after := procsIn(t, kind, "GOMAXPROCS=3"); start != 3 || after != 3 {
			t.Fatalf("%s with GOMAXPROCS=3: started with %d Ps and runs with %d; want 3 and 3", kind, start, after)
		}
		// A value the runtime ignores leaves its default.
		if _, _, after := procsIn(t, kind, "GOMAXPROCS=many"); after != start {
			t.Fatalf("%s with GOMAXPROCS=many: runs with %d Ps; want the default, %d", kind, after, start)
		}
	}
}

// A burst's writes are gathered exactly when the command runs on one P
// (rpc.GroupBursts), whatever the CPUs: a stdio session on a machine of
// many, and any command given one P; not a command with more.
func TestProcsForGroupsBurstsOnOneP(t *testing.T) {
	t.Parallel()
	if _, _, after, group := procsGroupIn(t, "stdio"); after != 1 || !group {
		t.Fatalf("a stdio session: %d Ps, gathering bursts %t; want 1 P and gathering", after, group)
	}
	if _, _, after, group := procsGroupIn(t, "other", "GOMAXPROCS=1"); after != 1 || !group {
		t.Fatalf("another command with GOMAXPROCS=1: %d Ps, gathering bursts %t; want 1 P and gathering", after, group)
	}
	for _, kind := range []string{"stdio", "other"} {
		if _, _, after, group := procsGroupIn(t, kind, "GOMAXPROCS=2"); after != 2 || group {
			t.Fatalf("%s with GOMAXPROCS=2: %d Ps, gathering bursts %t; want 2 Ps and no gathering", kind, after, group)
		}
	}
}
