package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// stackMovedInInit says whether the main goroutine's stack moved while
// this package's initialisers, the last to run, used 96 KiB of it: a stack
// moves when it grows. internal/mainstack grew it to 128 KiB before the
// other initialisers ran, so it must not have.
var stackMovedInInit = stackMoves(96 << 10)

// stackMoves uses n bytes of the stack below its own frame and says
// whether its frame moved meanwhile. Only a uintptr keeps the old address:
// a copy adjusts every pointer into the stack.
func stackMoves(n int) bool {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	useStack(n)
	return uintptr(unsafe.Pointer(&here)) != before
}

//go:noinline
func useStack(n int) byte {
	var frame [4 << 10]byte
	frame[n%len(frame)] = 1
	if n <= len(frame) {
		return frame[0]
	}
	return useStack(n-len(frame)) + frame[1]
}

func TestMainStackGrownBeforeInitialisers(t *testing.T) {
	if stackMovedInInit {
		t.Error("the main goroutine's stack grew while the initialisers ran: internal/mainstack did not size it first (is it still imported?)")
	}
	// The probe itself can tell: past 128 KiB the stack has to grow.
	if !stackMoves(160 << 10) {
		t.Error("using 160 KiB of a 128 KiB stack did not move it: stackMoves cannot tell")
	}
}

// mainstack only runs first while it imports nothing (see its doc).
func TestMainstackImportsNothing(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("internal", "mainstack", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("mainstack's files: %v %v", files, err)
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
			t.Errorf("%s imports %s: mainstack must import nothing, or its initialiser runs after that package's", f, imp.Path.Value)
		}
	}
}

// The stack is sized before the initialisers that build deep stacks run.
func TestMainstackInitialisedFirst(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	order := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = len(order)
		}
	}
	at, ok := order["github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/mainstack"]
	if !ok {
		t.Fatalf("no init line for mainstack in GODEBUG=inittrace=1's output:\n%s", out)
	}
	for _, later := range []string{"os", "go.yaml.in/yaml/v3", "google.golang.org/protobuf/reflect/protodesc", "github.com/google/cel-go/cel", "github.com/mcp-gate/mcp-gate/policy"} {
		if l, ok := order[later]; ok && l < at {
			t.Errorf("%s was initialised before mainstack (%d, mainstack %d of %d)", later, l, at, len(order))
		} else if !ok {
			t.Errorf("no init line for %s: the test no longer says what it claims", later)
		}
	}
}
