// Package mainstack grows the main goroutine's stack to 64 KiB before the
// other packages' initialisers run, so that they never grow it.
//
// Why: a goroutine's stack grows by being copied, and the copy walks every
// frame on it through the binary's pclntab (its stack maps and PC tables,
// 6 MB in the gate). The kernel maps a binary in 64 KB windows around each
// page first read (fault-around), so one walk of the deep stacks that
// yaml, protobuf's registration and cel-go's initialisers build, scattered
// over that table, left about half a megabyte of it resident that nothing
// reads again: the initialisers' frames are gone once they return. Grown
// here, the stack holds three frames when it is copied. An idle stdio
// gate's peak RSS went from 15.1 to 14.6 MB pinned and from 15.3 to 14.9 MB
// unpinned (`go run ./e2e/bench -base-gate A -gate B -only cold -cold 20
// -rounds 4`), and from 16.4 to 15.9 MB with a collection every few calls
// (GOGC=5), so the saving lasts; cold start did not move (0.98x, 1.01x).
// 64 KiB is what the initialisers grew it to themselves; a 128 KiB stack
// saved nothing more and zeroed 64 KiB more of it.
//
// It imports nothing but unsafe, which has no initialiser, so Go
// initialises it before any package that imports something (of the
// packages whose imports are done, the first by import path):
// cmd/mcp-gate's early_test.go holds it to that, mainstack_test.go to its
// effect. Every command gets it: it only sizes one stack.
package mainstack

import "unsafe"

// Top is an address near the top of the main goroutine's stack once it is
// sized. A stack is copied to grow, never grown in place, so a later
// initialiser whose locals lie far from Top ran on a copy: a test's
// initialiser, the last to run, checks that none was made.
var Top uintptr

// depth is a variable so that the compiler keeps grow's frame whole.
var depth = 1

// grow's frame is the size the stack must reach: the runtime doubles a
// stack until the frame fits, from 8 KiB to 64 KiB here (128 KiB under
// the race detector, whose frames are larger).
//
//go:noinline
func grow() byte {
	var frame [62 << 10]byte
	frame[depth] = 1
	return frame[2*depth]
}

func init() {
	_ = grow()
	var here byte
	Top = uintptr(unsafe.Pointer(&here))
}
