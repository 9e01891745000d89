//go:build linux

package rpc

import (
	"os"
	"syscall"
	"testing"
)

// fillPipe writes to the non-blocking pipe w until the kernel has no more
// room in it.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for i := range chunk {
		chunk[i] = ' '
	}
	full := false
	for !full {
		if err := rc.Write(func(fd uintptr) bool {
			_, err := syscall.Write(int(fd), chunk)
			full = err == syscall.EAGAIN
			if err != nil && !full {
				t.Errorf("filling the pipe: %v", err)
				full = true
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
}
