package rpc

import (
	"io"
	"os"
)

// Stdio returns the reader and writer a Stream over the process's own stdin
// and stdout should use, and a function that closes whatever Stdio opened.
//
// Why: the Go runtime waits on the pipes of an upstream child in its
// netpoller, but reads os.Stdin with a blocking read(2), which holds a
// scheduler P until sysmon takes it back. With one P (a one-CPU container,
// where Go sets GOMAXPROCS=1) that read stalls every other goroutine for
// tens to hundreds of microseconds per message: most of an echo call's time
// through the gate. So where it safely can, Stdio gives stdin and stdout
// the same I/O mode as the upstream pipes: non-blocking, parked in the
// netpoller.
//
// It never changes the flags of an open file description another process
// may share: O_NONBLOCK set on a shared pipe, FIFO or TTY would make the
// host's (or a sibling's) blocking reads and writes fail with EAGAIN. So:
//
//   - a pipe or FIFO (Linux): opened anew through /proc/self/fd/N, which
//     makes a new open file description of the same pipe, with O_NONBLOCK
//     on it alone. The original descriptor is left as it was (and open).
//   - a socket (Linux): left blocking, but read and written with
//     MSG_DONTWAIT, one call at a time, waiting for readiness on a private
//     epoll instance that the netpoller watches (see polledSocket). A
//     socket cannot be reopened, and net.FileConn would set O_NONBLOCK on
//     a dup, which shares the description, and so its flags, with every
//     process that holds the socket: that cannot be known to be the gate
//     alone (a host may keep its copy of the child's end).
//   - a TTY, a regular file, anything Stdio cannot reopen or poll (no
//     /proc, not Linux, a pipe owned by another user, nested epoll
//     refused), or a reader or writer that is
//     not an *os.File: left as it is. The Stream reads on a goroutine of
//     its own, as before.
//
// Whatever the mode, bytes, EOF and errors are the same; only how a waiting
// read waits differs. One difference remains: a write to a closed pipe
// or socket fails with EPIPE, where one to fd 1 killed the process with
// SIGPIPE; the Stream reports it as a *WriteError and the gate shuts down
// in order, stopping its upstreams.
func Stdio(in io.Reader, out io.Writer) (io.Reader, io.Writer, func()) {
	var closers []io.Closer
	if f, ok := in.(*os.File); ok {
		if r, c := pollableIn(f); r != nil {
			in = r
			closers = append(closers, c)
		}
	}
	if f, ok := out.(*os.File); ok {
		if w, c := pollableOut(f); w != nil {
			out = w
			closers = append(closers, c)
		}
	}
	return in, out, func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}
}
