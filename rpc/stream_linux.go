package rpc

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// nonblockingWriter returns a function that writes as much of b as w takes
// at once, without waiting, or nil when w cannot be written that way. A
// pollable *os.File (a pipe the runtime made non-blocking, stdout reopened
// by Stdio) and a polled socket can: a write that would block writes
// nothing (EAGAIN) instead. A blocking descriptor (a TTY, a file, a pipe
// Stdio could not reopen) cannot, and keeps the writer goroutine.
func nonblockingWriter(w io.Writer) func([][]byte) (int, error) {
	switch f := w.(type) {
	case *os.File:
		// Only a pollable file takes a deadline, and only one whose
		// description is the gate's own and non-blocking may be written
		// raw (ownNonblocking).
		if f.SetWriteDeadline(time.Time{}) != nil || !ownNonblocking(f) {
			return nil
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return nil
		}
		return func(bufs [][]byte) (int, error) {
			var iov [3]syscall.Iovec
			k := 0
			for _, b := range bufs {
				if len(b) > 0 && k < len(iov) {
					iov[k].Base = &b[0]
					iov[k].SetLen(len(b))
					k++
				}
			}
			if k == 0 {
				return 0, nil
			}
			var n int
			var werr error
			// rc.Write holds the file's write lock and reports a closed
			// file; the function never asks it to wait. One writev: the
			// parts of a message (head, payload, tail) in one raw system
			// call (see rawIO).
			if err := rc.Write(func(fd uintptr) bool {
				for {
					r, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
					if e == syscall.EINTR {
						continue
					}
					n, werr = int(r), nil
					if e != 0 {
						n, werr = 0, e
					}
					return true
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
		return func(bufs [][]byte) (int, error) {
			// One part at a time: what is left goes to the writer goroutine.
			for _, b := range bufs {
				if len(b) > 0 {
					return f.tryWrite(b)
				}
			}
			return 0, nil
		}
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

// ownNonblocking reports whether f may be read and written raw: its
// descriptor is not one of the standard three, whose open file
// descriptions the gate shares with the host (another process may make
// them blocking), and its description is non-blocking now. A raw call on
// a blocking descriptor would hold the gate's P with no hand-off, where
// no deadline, context or Close could end it. The gate's own descriptions
// (a reopened stdin or stdout, a child's pipes) are non-blocking from the
// start, and nothing in the gate calls Fd on them, which would make them
// blocking.
func ownNonblocking(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		if fd <= 2 {
			return
		}
		fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		ok = e == 0 && fl&syscall.O_NONBLOCK != 0
	})
	return ok
}

// rawIO makes one read or write system call on a non-blocking descriptor
// without telling the scheduler (RawSyscall). Such a call never waits: it
// moves what fits and returns, or EAGAIN. Announced as a system call (as
// os.File does), a write that wakes the peer on a shared CPU is often
// preempted by it while it is still inside the call; the runtime then
// counts the gate's only P as held in a system call, takes it back
// (sysmon's retake) and hands it to another thread, and every relayed
// message pays futex wake-ups and thread switches for nothing. Files and
// blocking descriptors keep the announced calls: they can wait. The race
// detector does not see the buffers of a raw call as read or written.
func rawIO(trap, fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}

// directReader returns a reader of the pollable pipe r that reads with
// rawIO, waiting for data and honouring read deadlines in the netpoller
// as os.File does, or r itself when r is not such a file.
func directReader(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok || f.SetReadDeadline(time.Time{}) != nil || !ownNonblocking(f) {
		return r
	}
	if _, ok := pipeStat(f); !ok {
		return r
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return r
	}
	p := &rawPipeReader{f: f, rc: rc}
	p.readFn = p.readOnce
	return p
}

// rawPipeReader reads a non-blocking pipe with rawIO (see there for why).
//
// It is read by one reader at a time (a Stream's), so the buffer of the
// read under way and its outcome are fields, read and written by readFn,
// made once: a function literal capturing Read's locals would escape
// through the RawConn interface and cost three allocations per read.
type rawPipeReader struct {
	f      *os.File
	rc     syscall.RawConn
	readFn func(fd uintptr) bool // p.readOnce
	buf    []byte
	n      int
	rerr   error
}

// readOnce is one attempt of Read's: done unless the pipe is empty.
func (p *rawPipeReader) readOnce(fd uintptr) bool {
	p.n, p.rerr = rawIO(syscall.SYS_READ, fd, p.buf)
	return p.rerr != syscall.EAGAIN
}

func (p *rawPipeReader) Read(b []byte) (int, error) {
	// rc.Read calls the function again once the pipe is readable, and
	// returns os.ErrDeadlineExceeded when a deadline ends the wait.
	p.buf, p.n, p.rerr = b, 0, nil
	err := p.rc.Read(p.readFn)
	n, rerr := p.n, p.rerr
	p.buf, p.rerr = nil, nil // holds on to no buffer between reads
	if err != nil {
		// As os.File reports it (a closed file is os.ErrClosed).
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, err
		}
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: err}
	}
	if rerr != nil {
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: rerr}
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// SetReadDeadline interrupts a waiting Read, as the file's own does.
func (p *rawPipeReader) SetReadDeadline(t time.Time) error { return p.f.SetReadDeadline(t) }
