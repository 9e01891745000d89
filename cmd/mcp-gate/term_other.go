//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package main

import "io"

// isTerminal is false where the gate cannot tell: configuration errors are
// then shown to the host, as for any host-started gate.
func isTerminal(io.Reader) bool { return false }
