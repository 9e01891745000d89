// Package mainstack grows the main goroutine's stack to 128 KiB before the
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
// The gate's initialisers grew it to 64 KiB themselves; 128 KiB leaves room
// on every build (below) and measured the same (14.8 MB pinned with either).
//
// It imports nothing but unsafe, which has no initialiser, so Go
// initialises it among the first few packages (of the packages whose
// imports are done, the first by import path: only a few import-free ones
// whose paths sort before its own come first): cmd/mcp-gate's
// early_test.go holds it to coming before the deep initialisers,
// mainstack_test.go to its effect. Every command gets it: it only sizes
// one stack.
//
// A collection while the initialisers run would shrink the stack again,
// as it shrinks any stack that uses under a quarter of itself. They
// allocate about 0.7 MB, under the collector's first goal (4 MB) with the
// default pacing; GOGC under about 17, or a low GOMEMLIMIT, collects
// before they end.
package mainstack

import "unsafe"

// Top is an address near the top of the main goroutine's stack once it is
// sized. A stack is copied to grow, never grown in place, so a later
// initialiser whose locals lie far from Top ran on a copy: a test's
// initialiser, the last to run, checks that none was made.
var Top uintptr

// depth is a variable so that the compiler keeps grow's frame whole.
var depth = 1

// grow's frame is what makes the runtime size the stack: it doubles a
// stack until the frame, what the stack already holds and its guard
// (0.9-6 KiB: more under the race detector and on Windows) fit. So the
// frame is exactly 64 KiB: a 64 KiB stack can never hold it, and a 128 KiB
// one always does, whatever the three frames above it and the guard come
// to on the platform. (A 62 KiB frame, as first written, left the stack
// at 64 KiB in an ordinary build and at 128 KiB under the race detector.)
//
//go:noinline
func grow() byte {
	var frame [64 << 10]byte
	frame[depth] = 1
	return frame[2*depth]
}

func init() {
	_ = grow()
	var here byte
	Top = uintptr(unsafe.Pointer(&here))
}
