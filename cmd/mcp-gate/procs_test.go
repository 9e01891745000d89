package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/oneproc"
)

// procsChild, in the environment of a re-run of this test binary, makes
// TestMain report the Ps the process has after the initialisers and after
// procsFor, instead of running the tests.
const procsChild = "MCP_GATE_TEST_PROCS_CHILD"

func TestMain(m *testing.M) {
	if kind := os.Getenv(procsChild); kind != "" {
		init := runtime.GOMAXPROCS(0)
		procsFor(kind == "stdio")
		fmt.Printf("start=%d init=%d after=%d\n", oneproc.AtStart(), init, runtime.GOMAXPROCS(0))
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
	if _, err := fmt.Sscanf(string(out), "start=%d init=%d after=%d", &start, &init, &after); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	return start, init, after
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

// oneproc only works while it imports nothing but runtime: Go initialises
// a package once its imports are, the first by import path, so any other
// import would put its initialiser after theirs.
func TestOneprocImportsOnlyRuntime(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("internal", "oneproc", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("oneproc's files: %v %v", files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != "runtime" {
				t.Errorf("%s imports %q: oneproc may import only runtime, or its initialiser runs after that package's", f, p)
			}
		}
	}
}

// The one P is set before the initialisers that allocate most run: those
// of os's dependents, protobuf and cel-go, and the gate's own packages.
func TestOneprocInitialisedFirst(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	order := map[string]int{}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = n
			n++
		}
	}
	at, ok := order["github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/oneproc"]
	if !ok {
		t.Fatalf("no init line for oneproc in GODEBUG=inittrace=1's output:\n%s", out)
	}
	for _, later := range []string{"os", "google.golang.org/protobuf/reflect/protodesc", "github.com/google/cel-go/cel", "github.com/mcp-gate/mcp-gate/guard"} {
		if l, ok := order[later]; ok && l < at {
			t.Errorf("%s was initialised before oneproc (%d, oneproc %d of %d)", later, l, at, n)
		} else if !ok {
			t.Errorf("no init line for %s: the test no longer says what it claims", later)
		}
	}
}
