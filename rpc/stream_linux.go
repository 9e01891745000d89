package rpc

import (
	"io"
	"os"
	"syscall"
	"time"
)

// nonblockingWriter returns a function that writes as much of b as w takes
// at once, without waiting, or nil when w cannot be written that way. A
// pollable *os.File (a pipe the runtime made non-blocking, stdout reopened
// by Stdio) and a polled socket can: a write that would block writes
// nothing (EAGAIN) instead. A blocking descriptor (a TTY, a file, a pipe
// Stdio could not reopen) cannot, and keeps the writer goroutine.
func nonblockingWriter(w io.Writer) func([]byte) (int, error) {
	switch f := w.(type) {
	case *os.File:
		// Only a pollable file takes a deadline; only a pollable file is
		// non-blocking.
		if f.SetWriteDeadline(time.Time{}) != nil {
			return nil
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return nil
		}
		return func(b []byte) (int, error) {
			var n int
			var werr error
			// rc.Write holds the file's write lock and reports a closed
			// file; the function never asks it to wait.
			if err := rc.Write(func(fd uintptr) bool {
				for {
					n, werr = syscall.Write(int(fd), b)
					if werr != syscall.EINTR {
						return true
					}
				}
			}); err != nil {
				return 0, err
			}
			if werr == syscall.EAGAIN {
				return 0, nil
			}
			if werr != nil {
				return 0, &os.PathError{Op: "write", Path: f.Name(), Err: werr}
			}
			return n, nil
		}
	case *polledSocket:
		return f.tryWrite
	}
	return nil
}

// SetReadDeadline interrupts a Read waiting on the socket, as a pollable
// file's deadline does: the wait is on the epoll instance, in the
// netpoller.
func (p *polledSocket) SetReadDeadline(t time.Time) error { return p.ep.SetReadDeadline(t) }

// tryWrite writes as much of b as the socket takes at once.
func (p *polledSocket) tryWrite(b []byte) (int, error) {
	for {
		n, e := syscall.SendmsgN(p.fd, b, nil, nil, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return 0, nil
		case e != nil:
			return 0, &os.PathError{Op: "write", Path: p.sock.Name(), Err: e}
		}
		return n, nil
	}
}
