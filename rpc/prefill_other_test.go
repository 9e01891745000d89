//go:build !linux

package rpc

import (
	"os"
	"testing"
)

// prefillPipe cannot size a pipe outside Linux; see prefill_linux_test.go.
func prefillPipe(*testing.T, *os.File, string) bool { return false }
