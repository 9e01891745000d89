package main

import (
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
