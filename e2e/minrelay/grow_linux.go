package main

import (
	"sync"
	"syscall"
)

// pipeSize is the buffer asked for on a pipe a large line crosses, as the
// gate asks (rpc's pipeSize): 1 MB, Linux's default pipe-max-size.
const pipeSize = 1 << 20

// pipeGrower returns a function that asks once for a pipeSize buffer on x
// (F_SETPIPE_SZ) when x is a pipe the runtime polls, or a function that
// does nothing. As in the gate (rpc.pipeGrower), it is asked for lazily,
// when the first large line crosses, and the descriptor is reached through
// SyscallConn().Control, never (*os.File).Fd: Fd puts a descriptor the
// runtime made non-blocking back into blocking mode, and a relay whose
// upstream pipe turns blocking stalls for sysmon's 10 ms on every call
// with two CPUs (see the package doc).
func pipeGrower(x any) func() {
	sc, ok := x.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// A system that refuses (not a pipe, a lower pipe-max-size,
			// the user's pipe quota spent) leaves the buffer as it was.
			_ = rc.Control(func(fd uintptr) {
				_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
			})
		})
	}
}
