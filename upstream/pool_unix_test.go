//go:build unix

package upstream_test

import "syscall"

// errNoProcess is what probePID returns once a process is gone.
const errNoProcess = syscall.ESRCH

// probePID is kill(pid, 0): nil while pid names a process (a zombie not yet
// reaped still does), ESRCH once there is none.
func probePID(pid int) error { return syscall.Kill(pid, 0) }
