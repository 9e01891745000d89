//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package main

import "os"

// isTerminal is false where the gate cannot tell: watch needs a terminal.
func isTerminal(*os.File) bool { return false }
