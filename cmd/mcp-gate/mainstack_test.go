package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/mcp-gate/mcp-gate/cmd/mcp-gate/internal/mainstack"
)

// stackTopInInit is where this package's initialisers, the last to run,
// find the top of the main goroutine's stack. It is near mainstack.Top
// only if no initialiser after mainstack's grew the stack: a stack grows
// by being copied to new memory, at least 64 KiB away, since the old stack
// is still in use while it is copied.
var stackTopInInit = stackTop()

//go:noinline
func stackTop() uintptr {
	var here byte
	return uintptr(unsafe.Pointer(&here))
}

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

// stackMovedInInit says whether an initialiser grew the main goroutine's
// stack after mainstack sized it: a stack grows by being copied to new
// memory, at least 64 KiB away, since the old stack is in use while it is
// copied.
func stackMovedInInit() (moved bool, by int64) {
	by = int64(stackTopInInit) - int64(mainstack.Top)
	return by < -16<<10 || by > 16<<10, by
}

func TestMainStackSizedBeforeInitialisers(t *testing.T) {
	if mainstack.Top == 0 {
		t.Fatal("mainstack's initialiser did not run")
	}
	moved, by := stackMovedInInit()
	if gcPacedFromEnv() {
		// A collection while the initialisers run shrinks a stack that
		// uses under a quarter of itself, and they allocate about 0.7 MB:
		// GOGC under about 17 (or a low GOMEMLIMIT) collects before they
		// end. The gate runs with the default pacing: so does the check,
		// in a child.
		moved, by = mainstackChild(t)
	}
	if moved {
		t.Errorf("the top of the main goroutine's stack moved by %d bytes between mainstack's initialiser and this package's: an initialiser grew the stack after mainstack sized it", by)
	}
	// The check can tell: a stack that grows moves.
	if !stackMoves(256 << 10) {
		t.Error("using 256 KiB of the stack did not move it: a moved stack cannot be told here")
	}
}

// mainstackChildEnv, in the environment of a re-run of this test binary,
// makes TestMain print stackMovedInInit instead of running the tests.
const mainstackChildEnv = "MCP_GATE_TEST_MAINSTACK_CHILD"

// gcPacedFromEnv says whether the environment sets the collector's pacing.
func gcPacedFromEnv() bool {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	return gogc || limit
}

// mainstackChild runs this test binary as a child under the collector's
// default pacing and returns its stackMovedInInit.
func mainstackChild(t *testing.T) (bool, int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, mainstackChildEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	var moved bool
	var by int64
	if _, err := fmt.Sscanf(string(out), "moved=%t by=%d", &moved, &by); err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	return moved, by
}
