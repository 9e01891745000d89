package upstream

import (
	"os"

	"golang.org/x/sys/unix"
)

// unreadInput returns how many bytes written to the pipe f (the write end
// of a child's stdin) the child has not read yet: FIONREAD, which Linux
// answers for either end of a pipe.
func unreadInput(f *os.File) (n int, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
