package audit

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// An audit log file that is deleted, or replaced by a file renamed over
// it, while the gate writes it stays open: its records would go on to an
// inode no name reaches any more, on a disk nobody reads, and be gone
// when the gate exits, while the calls they record were forwarded as if
// on record. Whoever can remove a file in the log's directory (a tool of
// the model's with write access there, a cleanup job) could so have every
// later call run unrecorded. So after each write the file's link count is
// read (one fstat, without a path lookup): once it is zero the path is
// opened again (created, as at start), a line saying so is written there,
// and the write is made again in the new file. A write returns only once
// its bytes are in a file that has a name; when the path cannot be opened
// again the write fails, and so does the call it records (README, "The
// audit log"). A write that failed on a file with no name (a FIFO made
// anew by its reader) is made again at the path the same way. A file renamed away (a rotation) keeps its name and its
// records: it is written on, as before.

// EventReopened marks the first line of an audit log file the gate
// created because the one it was writing had been deleted or replaced.
const EventReopened = "audit_reopened"

// pathFile is an audit log opened by path, written through fileWriter.
// Its writers are serialised by lockedWriter; mu serialises them with
// Close.
type pathFile struct {
	mu   sync.Mutex
	path string
	perm os.FileMode
	f    *os.File
	w    io.Writer
}

// OpenFile opens path for appending (created with mode 0600) and returns a
// Logger writing JSON lines to it, and the function that closes it. The
// file is opened again should it be deleted or replaced while the gate
// runs (above).
func OpenFile(path string) (*Logger, func() error, error) {
	p := &pathFile{path: path, perm: 0o600}
	f, err := p.open()
	if err != nil {
		return nil, nil, err
	}
	p.f, p.w = f, fileWriter(f)
	return newLogger(p), p.Close, nil
}

func (p *pathFile) open() (*os.File, error) {
	if fi, err := os.Stat(p.path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		return openFIFO(p.path)
	}
	return os.OpenFile(p.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, p.perm)
}

// fifoWait is how long the gate waits at start for a reader of an audit
// FIFO (a log shipper starting beside it).
var fifoWait = 10 * time.Second

// openFIFO opens a FIFO for writing once a process has it open for
// reading, waiting fifoWait at most. A plain open waits for a reader for
// ever: the gate hung at start, before it answered its host, when the
// shipper was not running.
func openFIFO(path string) (*os.File, error) {
	deadline := time.Now().Add(fifoWait)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
		if err == nil || !errors.Is(err, syscall.ENXIO) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: no process read the FIFO within %v", path, fifoWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// maxReopens bounds the files tried for one write: a path deleted again
// as soon as it is created fails the write rather than looping.
const maxReopens = 3

func (p *pathFile) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return 0, os.ErrClosed
	}
	n, err := p.w.Write(b)
	for range maxReopens {
		// A write that failed is tried again where the path leads now
		// too, when the file it failed on has no name: a log shipper's
		// FIFO made anew when it restarted (the old one has no reader,
		// and fails every write), a file deleted on a full disk. A write
		// that failed on a file that still has a name fails as it is.
		if p.hasName() {
			return n, err
		}
		// What was written went to a file no name reaches: write it
		// again where the path leads now.
		if rerr := p.reopen(); rerr != nil {
			if err != nil {
				return n, err
			}
			return 0, rerr
		}
		// Of the new file: a part written there is a torn line of it.
		n, err = p.w.Write(b)
	}
	if err != nil {
		return n, err
	}
	return 0, &os.PathError{Op: "write", Path: p.path, Err: errVanishing}
}

var errVanishing = fmt.Errorf("the audit log was deleted %d times in a row while being written", maxReopens)

// hasName reports whether the file written is still reachable by a name:
// its link count, and where that is zero (a filesystem may not count
// links) whether the path still names it. A file whose link count
// cannot be read counts as named: the writes go on as they would without
// this check.
func (p *pathFile) hasName() bool {
	n, err := linkCount(p.f)
	if err != nil || n > 0 {
		return true
	}
	fi, err := p.f.Stat()
	if err != nil {
		return true
	}
	at, err := os.Stat(p.path)
	return err == nil && os.SameFile(fi, at)
}

// reopen opens the path again and writes the line that says why.
func (p *pathFile) reopen() error {
	f, err := p.open()
	if err != nil {
		return err
	}
	w := fileWriter(f)
	line := reopenedLine(time.Now())
	if _, err := w.Write(line); err != nil {
		f.Close()
		return err
	}
	p.f.Close()
	p.f, p.w = f, w
	return nil
}

// reopenedLine is the first line of a file opened again, in the records'
// own shape.
func reopenedLine(t time.Time) []byte {
	b := append([]byte(nil), `{"time":"`...)
	b = appendTime(b, t)
	b = append(b, `","level":"`...)
	b = append(b, slog.LevelWarn.String()...)
	b = append(b, `","msg":"audit log reopened","event":`...)
	b = appendJSONString(b, EventReopened)
	b = appendKey(b, KeyDetail)
	b = appendJSONString(b, "the file this audit log was being written to was deleted or replaced; the records from here on are in this new file, and the records before it went with the old one")
	return append(b, "}\n"...)
}

// Close closes the file; later writes fail.
func (p *pathFile) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}
