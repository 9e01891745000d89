//go:build linux

package audit

import (
	"errors"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Why the records of a local file, or of a pipe, are written with a raw
// write(2).
//
// A write announced to the Go runtime as a system call (os.File.Write)
// wakes the runtime's monitor thread (sysmon) whenever every P was idle
// before it, so that the monitor can take the P back should the call
// block. A gate relaying one call at a time is idle between calls, so
// every decision record woke the monitor: a futex wake, a thread switch
// and a few 20 µs naps of that thread per call, on the CPU the host and
// the upstream share when the gate is pinned. Measured with e2e/bench
// (echo, c=1, one CPU): 44 µs of the gate's CPU per call with announced
// writes, 34 µs with raw ones, and p50 0.8× (unpinned: 0.6-0.7×).
//
// A raw write holds its P until the kernel returns, and a stop-the-world
// waits for it, so it is used only where a write returns at once: a
// regular file, not opened O_SYNC or O_DSYNC, on a local filesystem
// (localFS), where a write lands in the page cache. Writes that still
// took long (the kernel throttling a writer of too many dirty pages) turn
// the raw path off for good: slowWrites of them in a row may hold the P,
// the next ones are announced again. In a row, so that a writer merely
// preempted inside its write on a busy CPU keeps the raw path. A pipe
// (stderr, where the audit goes without --audit-log) is written through a
// non-blocking description of its own (pipeWriter), so a raw write never
// waits there: a full pipe is waited for in the netpoller, and a pipe
// whose reader is gone is left to os.File (SIGPIPE for stderr, as before).
// Everything else (a socket, a network or FUSE filesystem, a TTY) keeps
// os.File.Write.

// slowWrite is how long a raw write may take; after slowWrites slower
// ones in a row, later writes are announced.
var slowWrite = 10 * time.Millisecond

const slowWrites = 3

// pipeWait bounds how long a record waits for room in a pipe or FIFO (a
// log shipper reading --audit-log's FIFO that stalled, a host that stopped
// reading stderr). Past it the write fails, and the call it records is
// refused, as on a full disk: without a bound, every call, a denial's
// too, waited for ever, its writer holding the log, and the host's
// cancellation freed nothing. A reader that catches up lets the next
// record through.
//
// The bound is the pipe's, not each record's: the records of a burst wait
// for the log one after another (its lock, stderr's), so a bound of each
// one's own refused the hundredth call of a burst only after 1000 s.
// Once a write has waited pipeWait, the pipe is stalled until it takes
// something again, and a record that finds it full meanwhile fails at
// once, as on a full disk. A write waits pipeWait from the last time the
// pipe took any of its bytes: a reader that is slow but steady is waited
// for, whatever the size of the record.
var pipeWait = 10 * time.Second

// localFS are the statfs magic numbers of filesystems whose writes go to
// the page cache of this machine: ext2/3/4, xfs, btrfs, tmpfs, ramfs,
// f2fs, zfs, and overlayfs (a container's root, over one of these).
var localFS = map[uint32]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0x858458F6: true, // ramfs
	0xF2F52010: true, // f2fs
	0x2FC12FC1: true, // zfs
	0x794C7630: true, // overlayfs
}

// FileWriter returns a writer of w that announces no system call to the
// runtime where none can wait (above): for a regular file on a local
// filesystem or a pipe (stderr), a rawFile; for anything else, w itself.
// Its callers serialise their writes, as the audit Logger and the gate's
// stderr do; it writes each whole, as os.File does.
func FileWriter(w io.Writer) io.Writer { return fileWriter(w) }

// fileWriter is FileWriter.
func fileWriter(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	if !rawWritable(f) {
		return pipeWriter(f)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return w
	}
	return newRawFile(f, rc, true)
}

// pipeWriter returns a rawFile over a new, non-blocking open file
// description of the pipe or FIFO f (stderr, which a host reads through a
// pipe): a write the pipe has no room for waits in the netpoller, with no
// P held and no system call announced, and the flags of f's description,
// which other processes share, are left alone. It returns f when f is not
// a pipe or cannot be opened again.
func pipeWriter(f *os.File) io.Writer {
	st, ok := fifoStat(f)
	if !ok {
		return f
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	var fd uintptr
	// Control, not Fd: Fd may put the file back into blocking mode.
	if rc.Control(func(d uintptr) { fd = d }) != nil {
		return f
	}
	nf, err := os.OpenFile("/proc/self/fd/"+strconv.FormatUint(uint64(fd), 10), os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return f
	}
	// The same pipe, not whatever the path resolved to.
	if nst, ok := fifoStat(nf); !ok || nst.Dev != st.Dev || nst.Ino != st.Ino {
		nf.Close()
		return f
	}
	nrc, err := nf.SyscallConn()
	if err != nil {
		nf.Close()
		return f
	}
	r := newRawFile(nf, nrc, false)
	r.orig = f
	return r
}

// fifoStat returns f's stat when f is a pipe or FIFO.
func fifoStat(f *os.File) (*syscall.Stat_t, bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// rawWritable reports whether f is a regular file, opened without O_SYNC
// or O_DSYNC, on a local filesystem.
func rawWritable(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	cerr := rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return
		}
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if e != 0 || flags&syscall.O_DSYNC != 0 { // O_SYNC includes O_DSYNC's bit
			return
		}
		var fs syscall.Statfs_t
		if syscall.Fstatfs(int(fd), &fs) != nil {
			return
		}
		ok = localFS[uint32(fs.Type)] // f_type is 32 bits wide, whatever the field's Go type
	})
	return cerr == nil && ok
}

// rawFile appends to a file with raw write(2) calls (see above). It goes
// through the file's RawConn, so that a write after Close fails as
// os.File.Write does instead of reaching a descriptor reused since. Its
// callers serialise its writes (lockedWriter), which lets the write in
// progress live in the rawFile and the function handed to the RawConn be
// made once: a record costs no allocation.
type rawFile struct {
	f         *os.File
	rc        syscall.RawConn
	announced atomic.Bool // raw writes were slow: os.File.Write from now on
	slow      int         // slow raw writes in a row
	timed     bool        // a file, whose raw writes may be slow; not a pipe, whose waits are the netpoller's
	orig      *os.File    // a pipe's own file (pipeWriter), which a closed pipe is left to

	write func(fd uintptr) bool // writeFD, as a func value made once
	p     []byte                // the write in progress
	n     int                   // of p, written
	errno syscall.Errno         // why the write stopped short
	// waiting is set when the write in progress found a pipe full and
	// set a deadline (pipeWait) to wait for room within; progressed, when
	// the pipe took some of its bytes since (the deadline is set again at
	// the next wait).
	waiting, progressed bool
	// stalled is set when a write waited pipeWait for room in vain, until
	// the pipe takes something again (pipeWait).
	stalled bool
}

func newRawFile(f *os.File, rc syscall.RawConn, timed bool) *rawFile {
	r := &rawFile{f: f, rc: rc, timed: timed}
	r.write = r.writeFD
	return r
}

func (r *rawFile) Write(p []byte) (int, error) {
	if r.announced.Load() {
		return r.f.Write(p)
	}
	r.p, r.n, r.errno = p, 0, 0
	if !r.timed {
		err := r.rc.Write(r.write)
		if r.waiting {
			r.waiting = false
			r.f.SetWriteDeadline(time.Time{})
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			r.stalled = true
		}
		if err == nil && r.errno == syscall.EPIPE && r.orig != nil {
			// The reader is gone. The pipe's own file reports it as
			// os.File does: for stderr, SIGPIPE ends the gate, as it did
			// before stderr was written raw, rather than the gate going on
			// with its audit records lost.
			n := r.n
			m, err := r.orig.Write(r.p[n:])
			r.p = nil
			return n + m, err
		}
		return r.done(err)
	}
	start := time.Now()
	err := r.rc.Write(r.write)
	if time.Since(start) <= slowWrite {
		r.slow = 0
	} else if r.slow++; r.slow >= slowWrites {
		r.announced.Store(true)
	}
	return r.done(err)
}

// done ends a write: what was written, and the error that stopped it.
func (r *rawFile) done(err error) (int, error) {
	n, errno := r.n, r.errno
	r.p = nil
	if err == nil && errno != 0 {
		err = errno
	}
	if err != nil {
		return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: err}
	}
	return n, nil
}

// writeFD writes r.p to fd, all of it unless the kernel refuses. On a
// pipe with no room (EAGAIN) it returns false: the RawConn waits until the
// pipe can take more, and calls it again.
func (r *rawFile) writeFD(fd uintptr) bool {
	for r.n < len(r.p) {
		m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.p[r.n])), uintptr(len(r.p)-r.n))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			if !r.timed && (!r.waiting || r.progressed) {
				// A full pipe: wait for room (in the netpoller) within
				// pipeWait of the last time it took anything, not for
				// ever; not at all while it is stalled (pipeWait).
				d := time.Now().Add(pipeWait)
				if r.stalled {
					d = time.Unix(1, 0) // past: the wait ends at once
				}
				r.waiting, r.progressed = true, false
				r.f.SetWriteDeadline(d)
			}
			return false
		case e != 0:
			r.errno = e
			return true
		case m == 0:
			r.errno = syscall.EIO // a regular file that takes nothing: as io.ErrShortWrite
			return true
		}
		r.n += int(m)
		r.progressed, r.stalled = true, false // a reader is there
	}
	return true
}
