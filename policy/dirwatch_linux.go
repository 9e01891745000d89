package policy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// dirMask is what the policy watch asks inotify for on a directory: every
// change of what a name in it is (created, deleted, moved in or out, its
// attributes), a file closed after writing, and the directory's own end.
// It leaves out IN_MODIFY, sent at every write: a file beside the policy
// written line by line (an audit log) would send one per line.
const dirMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_DELETE_SELF |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF | unix.IN_ATTRIB |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// fileMask is what it asks for on the policy file itself: every write
// (IN_MODIFY, a truncation included), its close, its attributes, and its
// end. Only the policy's own writes send these.
const fileMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotifyWatcher is the Linux dirWatcher. Its instance is non-blocking and
// read through the runtime's poller, so Close ends the read loop.
type inotifyWatcher struct {
	// Set at construction.
	f      *os.File
	fd     int
	evs    chan fsnotify.Event
	errs   chan error
	closed chan struct{}
	loop   sync.WaitGroup

	mu   sync.Mutex
	shut bool             // guarded by mu: Close has begun, the descriptor is not to be used
	wds  map[string]int   // guarded by mu: watched path -> its watch descriptor
	refs map[int][]string // guarded by mu: watch descriptor -> the paths that name it
}

func newDirWatcher() (dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &inotifyWatcher{
		f:      os.NewFile(uintptr(fd), "inotify"),
		fd:     fd,
		evs:    make(chan fsnotify.Event),
		errs:   make(chan error),
		closed: make(chan struct{}),
		wds:    map[string]int{},
		refs:   map[int][]string{},
	}
	w.loop.Add(1)
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) events() <-chan fsnotify.Event { return w.evs }
func (w *inotifyWatcher) errors() <-chan error          { return w.errs }

func (w *inotifyWatcher) Add(dir string) error      { return w.add(dir, dirMask) }
func (w *inotifyWatcher) AddFile(path string) error { return w.add(path, fileMask) }

// add watches path with mask. Two paths of one inode (a symlinked
// directory and its target) share the kernel's watch; a path that names
// another inode than when it was added moves to the new one.
func (w *inotifyWatcher) add(path string, mask uint32) error {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shut {
		return fmt.Errorf("watching %s: the watcher is closed", path)
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, mask)
	if err != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: path, Err: err}
	}
	if old, ok := w.wds[path]; ok && old != wd {
		w.unrefLocked(path, old)
	}
	w.wds[path] = wd
	if !slices.Contains(w.refs[wd], path) {
		w.refs[wd] = append(w.refs[wd], path)
	}
	return nil
}

// Remove stops watching path.
func (w *inotifyWatcher) Remove(path string) error {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, ok := w.wds[path]
	if !ok || w.shut {
		return fmt.Errorf("%s is not watched", path)
	}
	delete(w.wds, path)
	return w.unrefLocked(path, wd)
}

// unrefLocked takes path off wd's paths and ends the kernel's watch when it
// was the last.
func (w *inotifyWatcher) unrefLocked(path string, wd int) error {
	w.refs[wd] = slices.DeleteFunc(w.refs[wd], func(p string) bool { return p == path })
	if len(w.refs[wd]) > 0 {
		return nil
	}
	delete(w.refs, wd)
	if _, err := unix.InotifyRmWatch(w.fd, uint32(wd)); err != nil && !errors.Is(err, unix.EINVAL) {
		// EINVAL: the kernel ended the watch already (its IN_IGNORED is
		// on the way).
		return &os.PathError{Op: "inotify_rm_watch", Path: path, Err: err}
	}
	return nil
}

// Watching reports whether path's watch is alive.
func (w *inotifyWatcher) Watching(path string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.wds[filepath.Clean(path)]
	return ok
}

// Close ends the watch; the channels are closed when it returns.
func (w *inotifyWatcher) Close() error {
	w.mu.Lock()
	if w.shut {
		w.mu.Unlock()
		return nil
	}
	w.shut = true
	w.mu.Unlock()
	close(w.closed)
	err := w.f.Close()
	w.loop.Wait()
	return err
}

// read turns what the instance reports into events until Close.
func (w *inotifyWatcher) read() {
	defer w.loop.Done()
	defer close(w.errs)
	defer close(w.evs)
	// Room for many events, each with a name of up to NAME_MAX bytes.
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			// Not a condition to wait out: the watch ends, as fsnotify's
			// does, and says why.
			w.send(nil, fmt.Errorf("reading inotify: %w", err))
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len, then len bytes
			// of name padded with NULs, in the machine's byte order.
			wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			end := off + unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
			if end > n {
				break // the kernel never splits an event; nothing to decode
			}
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"))
			off = end
			if !w.deliver(wd, mask, name) {
				return
			}
		}
	}
}

// deliver passes one inotify event on, as an event for each path that
// names its watch, or as an error. It reports false once the watcher is
// closed.
func (w *inotifyWatcher) deliver(wd int, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// What was lost is unknown: the reloader looks again.
		return w.send(nil, fsnotify.ErrEventOverflow)
	}
	w.mu.Lock()
	paths := slices.Clone(w.refs[wd])
	switch {
	case mask&unix.IN_IGNORED != 0:
		// The kernel ended the watch (its directory or file is gone, or
		// Remove asked): Watching says so, and a later Add starts anew. A
		// path already added again under another descriptor keeps that.
		for _, p := range paths {
			if w.wds[p] == wd {
				delete(w.wds, p)
			}
		}
		delete(w.refs, wd)
	case mask&unix.IN_MOVE_SELF != 0 && name == "" && !w.shut:
		// The watched directory or file moved: the watch would follow it
		// and report its events under the old name. It ends here instead,
		// as fsnotify's does; the reloader adds the path again, whatever
		// it names now.
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
	}
	w.mu.Unlock()
	var op fsnotify.Op
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		op = fsnotify.Create
	case mask&(unix.IN_DELETE|unix.IN_DELETE_SELF|unix.IN_IGNORED|unix.IN_UNMOUNT) != 0:
		op = fsnotify.Remove
	case mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0:
		op = fsnotify.Rename
	case mask&unix.IN_ATTRIB != 0:
		op = fsnotify.Chmod
	default: // IN_MODIFY, IN_CLOSE_WRITE
		op = fsnotify.Write
	}
	for _, p := range paths {
		ev := fsnotify.Event{Name: p, Op: op}
		if name != "" {
			ev.Name = filepath.Join(p, name)
		}
		if !w.send(&ev, nil) {
			return false
		}
	}
	return true
}

func (w *inotifyWatcher) send(ev *fsnotify.Event, err error) bool {
	if ev != nil {
		select {
		case w.evs <- *ev:
			return true
		case <-w.closed:
			return false
		}
	}
	select {
	case w.errs <- err:
		return true
	case <-w.closed:
		return false
	}
}
