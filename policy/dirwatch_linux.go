package policy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// inotifyMask is what the policy watch asks inotify for on a directory:
// every change of what a name in it is (created, deleted, moved in or out,
// its attributes), and a file closed after writing, which is where an
// in-place rewrite ends. It leaves out IN_MODIFY, sent at every write: a
// file beside the policy written line by line (an audit log) sends one per
// line and never closes, and a policy rewritten in place is seen when it
// is closed, and by the reloader's poll if it is never closed.
const inotifyMask = unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_DELETE_SELF |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF | unix.IN_ATTRIB |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// inotifyWatcher watches directories with inotifyMask. Its instance is
// non-blocking and read through the runtime's poller, so Close ends the
// read loop.
type inotifyWatcher struct {
	// Set at construction.
	f      *os.File
	fd     int
	evs    chan fsnotify.Event
	errs   chan error
	closed chan struct{}
	loop   sync.WaitGroup

	mu    sync.Mutex
	wds   map[string]int // guarded by mu: directory -> watch descriptor
	paths map[int]string // guarded by mu: watch descriptor -> directory
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
		paths:  map[int]string{},
	}
	w.loop.Add(1)
	go w.read()
	return w, nil
}

func (w *inotifyWatcher) events() <-chan fsnotify.Event { return w.evs }
func (w *inotifyWatcher) errors() <-chan error          { return w.errs }

// Add watches dir (again: a directory watched before gets the same mask).
func (w *inotifyWatcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	wd, err := unix.InotifyAddWatch(w.fd, dir, inotifyMask)
	if err != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	w.mu.Lock()
	w.wds[dir], w.paths[wd] = wd, dir
	w.mu.Unlock()
	return nil
}

// Remove stops watching dir.
func (w *inotifyWatcher) Remove(dir string) error {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	wd, ok := w.wds[dir]
	if ok {
		delete(w.wds, dir)
		delete(w.paths, wd)
	}
	w.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s is not watched", dir)
	}
	if _, err := unix.InotifyRmWatch(w.fd, uint32(wd)); err != nil {
		return &os.PathError{Op: "inotify_rm_watch", Path: dir, Err: err}
	}
	return nil
}

// Close ends the watch; the channels are closed once the read loop ends.
func (w *inotifyWatcher) Close() error {
	select {
	case <-w.closed:
		return nil
	default:
	}
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
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(raw.Len)
			if end > n {
				break // the kernel never splits an event; nothing to decode
			}
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"))
			off = end
			if !w.deliver(raw.Wd, raw.Mask, name) {
				return
			}
		}
	}
}

// deliver passes one inotify event on as an event or an error. It reports
// false once the watcher is closed.
func (w *inotifyWatcher) deliver(wd int32, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// What was lost is unknown: the reloader looks again.
		return w.send(nil, fsnotify.ErrEventOverflow)
	}
	w.mu.Lock()
	dir, ok := w.paths[int(wd)]
	if ok && mask&unix.IN_IGNORED != 0 {
		// The watch is gone (its directory was deleted or unmounted).
		delete(w.paths, int(wd))
		delete(w.wds, dir)
	}
	w.mu.Unlock()
	if !ok || (mask&unix.IN_IGNORED != 0 && mask&^unix.IN_IGNORED == 0) {
		return true
	}
	ev := fsnotify.Event{Name: dir}
	if name != "" {
		ev.Name = filepath.Join(dir, name)
	}
	switch {
	case mask&unix.IN_CREATE != 0, mask&unix.IN_MOVED_TO != 0:
		ev.Op = fsnotify.Create
	case mask&unix.IN_DELETE != 0, mask&unix.IN_DELETE_SELF != 0:
		ev.Op = fsnotify.Remove
	case mask&unix.IN_MOVED_FROM != 0, mask&unix.IN_MOVE_SELF != 0:
		ev.Op = fsnotify.Rename
	case mask&unix.IN_ATTRIB != 0:
		ev.Op = fsnotify.Chmod
	default: // IN_CLOSE_WRITE: an in-place write has ended
		ev.Op = fsnotify.Write
	}
	return w.send(&ev, nil)
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
