package rpc

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// pollableIn returns a reader for f whose waits are in the netpoller, with
// its closer, or nil: a pipe or FIFO reopened, a socket polled.
func pollableIn(f *os.File) (io.Reader, io.Closer) {
	if nf := reopenPipe(f, os.O_RDONLY); nf != nil {
		return nf, nf
	}
	if p := pollSocket(f, syscall.EPOLLIN); p != nil {
		return p, p
	}
	return nil, nil
}

// pollableOut is pollableIn for writing.
func pollableOut(f *os.File) (io.Writer, io.Closer) {
	if nf := reopenPipe(f, os.O_WRONLY); nf != nil {
		return nf, nf
	}
	if p := pollSocket(f, syscall.EPOLLOUT); p != nil {
		return p, p
	}
	return nil, nil
}

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

// A polledSocket reads or writes a socket through the netpoller without
// making it non-blocking. A socket cannot be reopened as a new description,
// and O_NONBLOCK on it would reach every process holding it; instead each
// call is made non-blocking on its own (MSG_DONTWAIT), and the wait for
// readiness is on a private epoll instance that watches the socket and is
// itself watched by the runtime's netpoller (epoll instances nest). Node
// hosts give their children socketpairs as stdio, so this is the common
// case there.
type polledSocket struct {
	sock *os.File // not owned: kept for its descriptor
	fd   int
	ep   *os.File // the private epoll instance: owned, non-blocking, pollable
	epfd int
	rc   syscall.RawConn

	// A polledSocket serves one direction of one Stream (its reader, or
	// its writer goroutine): one call at a time. So the state of the call
	// under way is fields, and the functions handed to rc.Read are made
	// once (pollSocket): function literals over a call's locals escape
	// through the RawConn interface, five allocations per read.
	waitFn          func(uintptr) bool  // p.attempt
	readFn, writeFn func() (again bool) // p.readOnce, p.writeOnce
	try             func() (again bool) // the call's: readFn or writeFn
	evs             [1]syscall.EpollEvent
	buf             []byte
	n               int // bytes read, or written so far
	err             error
}

// pollSocket returns a polledSocket for f waiting for events (EPOLLIN or
// EPOLLOUT), or nil when f is not a socket or the nesting is not possible.
func pollSocket(f *os.File, events uint32) *polledSocket {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil
	}
	frc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if err := frc.Control(func(d uintptr) { fd = int(d) }); err != nil || fd < 0 {
		return nil
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	// Level-triggered: an epoll_wait that finds nothing leaves the inner
	// ready list empty, so the next arrival is an edge the runtime sees.
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: events, Fd: int32(fd)}); err != nil {
		syscall.Close(epfd)
		return nil
	}
	// The epoll instance is the process's own: making it non-blocking
	// touches nothing shared, and makes os.NewFile register it with the
	// runtime's netpoller.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	rc, err := ep.SyscallConn()
	// Only a pollable file takes a deadline: otherwise RawConn.Read could
	// not wait, and blocking reads serve.
	if err != nil || ep.SetReadDeadline(time.Time{}) != nil {
		ep.Close()
		return nil
	}
	p := &polledSocket{sock: f, fd: fd, ep: ep, epfd: epfd, rc: rc}
	p.waitFn, p.readFn, p.writeFn = p.attempt, p.readOnce, p.writeOnce
	return p
}

// wait makes one non-blocking attempt with try, and while the socket is not
// ready waits on the epoll instance in the netpoller and tries again.
func (p *polledSocket) wait(try func() (again bool)) error {
	p.try = try
	err := p.rc.Read(p.waitFn)
	p.try = nil
	runtime.KeepAlive(p.sock)
	return err
}

// attempt is wait's function for rc.Read: done unless the socket is not
// ready.
func (p *polledSocket) attempt(uintptr) bool {
	for {
		if !p.try() {
			return true
		}
		// Not ready. Drain the instance's readiness: if it has an
		// event, the socket became ready meanwhile; try again.
		n, err := syscall.EpollWait(p.epfd, p.evs[:], 0)
		if err == syscall.EINTR || n > 0 {
			continue
		}
		return false
	}
}

func (p *polledSocket) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.buf, p.n, p.err = b, 0, nil
	err := p.wait(p.readFn)
	n, rerr := p.n, p.err
	p.buf, p.err = nil, nil // holds on to no buffer between calls
	if err != nil {
		return 0, err
	}
	return n, rerr
}

// readOnce is one attempt of Read's.
func (p *polledSocket) readOnce() (again bool) {
	n, _, e := syscall.Recvfrom(p.fd, p.buf, syscall.MSG_DONTWAIT)
	switch {
	case e == syscall.EAGAIN || e == syscall.EINTR:
		return true
	case e != nil:
		p.n, p.err = 0, &os.PathError{Op: "read", Path: p.sock.Name(), Err: e}
	case n == 0:
		p.n, p.err = 0, io.EOF
	default:
		p.n = n
	}
	return false
}

func (p *polledSocket) Write(b []byte) (int, error) {
	p.buf, p.n, p.err = b, 0, nil
	for p.n < len(b) && p.err == nil {
		if err := p.wait(p.writeFn); err != nil {
			done := p.n
			p.buf, p.err = nil, nil
			return done, err
		}
	}
	done, werr := p.n, p.err
	p.buf, p.err = nil, nil // holds on to no buffer between calls
	return done, werr
}

// writeOnce is one attempt of Write's, from what is left of its buffer.
func (p *polledSocket) writeOnce() (again bool) {
	// MSG_NOSIGNAL: a closed peer is EPIPE, as on the reopened pipes, not
	// a SIGPIPE.
	n, e := syscall.SendmsgN(p.fd, p.buf[p.n:], nil, nil, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
	switch {
	case e == syscall.EAGAIN || e == syscall.EINTR:
		return true
	case e != nil:
		p.err = &os.PathError{Op: "write", Path: p.sock.Name(), Err: e}
	default:
		p.n += n
	}
	return false
}

// Close closes the epoll instance, which ends a waiting Read or Write; the
// socket itself stays open.
func (p *polledSocket) Close() error { return p.ep.Close() }

// pipeSize is the buffer a Stream asks for on a pipe that carries a
// message larger than the default 64 KB (F_SETPIPE_SZ): a 1 MB result then
// crosses in one write and one wake-up of its reader instead of sixteen,
// each a context switch when the processes share a CPU. Linux lets an
// unprivileged process go up to /proc/sys/fs/pipe-max-size (1 MB by
// default).
const pipeSize = 1 << 20

// pipeGrower returns a function that asks once for a pipeSize buffer on x
// when x is a pipe, or nil. It is asked for only when a large message
// crosses the pipe, not when the pipe is made: pipe buffers count against
// the user's quota (pipe-user-pages-soft), and past it Linux gives the
// user's new pipes, the gate's or another program's, a smaller buffer, so
// servers that only ever send short messages must not spend it. A system
// that refuses (a lower pipe-max-size, the quota spent) leaves the pipe as
// it is: a larger buffer is an optimisation, never a requirement.
func pipeGrower(x any) func() {
	f, ok := x.(*os.File)
	if !ok {
		return nil
	}
	if _, ok := pipeStat(f); !ok {
		return nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			rc, err := f.SyscallConn()
			if err != nil {
				return
			}
			_ = rc.Control(func(fd uintptr) {
				_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
			})
		})
	}
}
