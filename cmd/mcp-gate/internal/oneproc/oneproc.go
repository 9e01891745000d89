// Package oneproc starts the mcp-gate process on one P (one thread
// running Go code at a time) before the other packages' initialisers run.
// The command then keeps it for a stdio session and gives every other
// command what the runtime chose at the start (cmd/mcp-gate/procs.go).
//
// Why in an initialiser, and in a package of its own: the runtime starts
// with a P per CPU, and everything the initialisers allocate on the
// second P (its cached spans, handed back to the shared lists when the P
// goes) stays resident. An idle stdio gate's peak RSS, unpinned on two
// CPUs (`go run ./e2e/bench -base-gate A -gate B -only cold -cpu
// unpinned -rounds 6`): 15.6-15.7 MB with the drop after the first relayed
// answer, 15.2 MB with it once os was initialised, 14.9 MB from here,
// against 14.8 MB with GOMAXPROCS=1 in the environment. Go initialises,
// of the packages whose imports are done, the first by import path, so a
// package that imports only runtime goes among the first few (the
// eighth in the gate, some 0.6 ms after exec; GODEBUG=inittrace=1).
// It must stay so: this package imports nothing else, and it cannot read
// the command line or the environment, which is why the command decides
// afterwards.
package oneproc

import "runtime"

// atStart is the GOMAXPROCS the runtime started with, from the
// environment or its default, before this package set one.
var atStart = runtime.GOMAXPROCS(1)

// AtStart returns the GOMAXPROCS the runtime started with, before this
// package set one: what a command that wants more than one P restores
// when GOMAXPROCS was set in the environment.
func AtStart() int { return atStart }
