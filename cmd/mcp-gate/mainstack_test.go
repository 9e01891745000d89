package main

import (
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

func TestMainStackSizedBeforeInitialisers(t *testing.T) {
	if mainstack.Top == 0 {
		t.Fatal("mainstack's initialiser did not run")
	}
	if d := int64(stackTopInInit) - int64(mainstack.Top); d < -16<<10 || d > 16<<10 {
		t.Errorf("the top of the main goroutine's stack moved by %d bytes between mainstack's initialiser and this package's: an initialiser grew the stack after mainstack sized it", d)
	}
	// The check can tell: a stack that grows moves.
	if !stackMoves(256 << 10) {
		t.Error("using 256 KiB of the stack did not move it: a moved stack cannot be told here")
	}
}
