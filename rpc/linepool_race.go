//go:build race

package rpc

// raceBuild turns on the poisoning of released line buffers (linepool.go):
// the suite runs with the race detector, and a build made for it (the
// e2e harness builds the gate with -race) catches a line released while
// something still refers to it.
const raceBuild = true
