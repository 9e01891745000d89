package rpc

import (
	"os"
	"strconv"
	"syscall"
)

// reopenPipe returns a new, non-blocking open file description of the pipe
// or FIFO f refers to, opened with flag (os.O_RDONLY or os.O_WRONLY), or nil
// when f is not a pipe or cannot be reopened. Opening with O_NONBLOCK also
// keeps the open itself from waiting for a partner on a FIFO; a write end
// whose reader has gone fails (ENXIO), and f is then used as it is.
func reopenPipe(f *os.File, flag int) *os.File {
	st, ok := pipeStat(f)
	if !ok {
		return nil
	}
	var fd uintptr
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	// Control, not Fd: Fd may put a file the runtime made non-blocking
	// back into blocking mode, a flag change on the shared description.
	if err := rc.Control(func(d uintptr) { fd = d }); err != nil {
		return nil
	}
	nf, err := os.OpenFile("/proc/self/fd/"+strconv.FormatUint(uint64(fd), 10), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	// The same pipe, not whatever the path resolved to.
	if nst, ok := pipeStat(nf); !ok || nst.Dev != st.Dev || nst.Ino != st.Ino {
		nf.Close()
		return nil
	}
	return nf
}

// pipeStat returns f's stat when f is a pipe or FIFO.
func pipeStat(f *os.File) (*syscall.Stat_t, bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}
