//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether r is a terminal (not /dev/null, which is a
// character device too).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	// Control, not Fd: Fd puts the descriptor in blocking mode, and stdin's
	// open file description is the host's too: a non-blocking pipe the
	// host shares would turn blocking under it (and under the gate's own
	// raw reads).
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
		tty = err == nil
	})
	return tty
}
