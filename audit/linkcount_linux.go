//go:build linux && (amd64 || arm64)

package audit

import (
	"os"
	"syscall"
	"unsafe"
)

// linkCount returns f's link count, read with a raw fstat (as the raw
// writes of filewrite_linux.go, for the same reason: no system call
// announced to the runtime on every record).
func linkCount(f *os.File) (uint64, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var st syscall.Stat_t
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.RawSyscall(syscall.SYS_FSTAT, fd, uintptr(unsafe.Pointer(&st)), 0)
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return uint64(st.Nlink), nil
}
