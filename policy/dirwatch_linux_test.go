package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// nextEvent returns the watcher's next event, failing t if none comes in
// a long while (the events below are all sent at once by the kernel).
func nextEvent(t *testing.T, w dirWatcher) fsnotify.Event {
	t.Helper()
	select {
	case ev, ok := <-w.events():
		if !ok {
			t.Fatal("the watcher's events ended")
		}
		return ev
	case err := <-w.errors():
		t.Fatalf("watch error: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
	}
	return fsnotify.Event{}
}

// A file written line by line beside the policy (the audit log, kept open)
// sends the watch nothing: the policy's own change is the first event. The
// same sequence through fsnotify, the premise, sends one event per line.
func TestDirWatchIgnoresWritesBeside(t *testing.T) {
	for _, tc := range []struct {
		name      string
		new       func() (dirWatcher, error)
		neighbour bool // the neighbour's writes arrive first
	}{
		{"inotify", newDirWatcher, false},
		{"fsnotify (the premise)", newFsnotifyWatcher, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			audit, err := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer audit.Close()
			w, err := tc.new()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Add(dir); err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if _, err := audit.WriteString(`{"event":"decision","n":` + strconv.Itoa(i) + "}\n"); err != nil {
					t.Fatal(err)
				}
			}
			policy := filepath.Join(dir, "policy.yaml")
			if err := os.WriteFile(policy, []byte("version: 1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ev := nextEvent(t, w)
			if got := ev.Name == audit.Name(); got != tc.neighbour {
				t.Fatalf("first event %v; want the neighbour's write first: %v", ev, tc.neighbour)
			}
			if tc.neighbour {
				return
			}
			if ev.Name != policy || !ev.Has(fsnotify.Create) {
				t.Fatalf("first event %v; want %s created", ev, policy)
			}
			// The write that ends with the file's close.
			if ev := nextEvent(t, w); ev.Name != policy || !ev.Has(fsnotify.Write) {
				t.Fatalf("second event %v; want %s written and closed", ev, policy)
			}
		})
	}
}

// Every way a name in the directory can change is an event naming it, a
// removed directory's watch ends with an event naming the directory, and
// Close ends both channels.
func TestDirWatchEvents(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, sub} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	tmp, policy := filepath.Join(dir, "policy.yaml.tmp"), filepath.Join(dir, "policy.yaml")
	steps := []struct {
		do   func() error
		want []fsnotify.Event
	}{
		{func() error { return os.WriteFile(tmp, []byte("x"), 0o600) },
			[]fsnotify.Event{{Name: tmp, Op: fsnotify.Create}, {Name: tmp, Op: fsnotify.Write}}},
		{func() error { return os.Rename(tmp, policy) }, // an editor's save
			[]fsnotify.Event{{Name: tmp, Op: fsnotify.Rename}, {Name: policy, Op: fsnotify.Create}}},
		{func() error { return os.Chmod(policy, 0o644) },
			[]fsnotify.Event{{Name: policy, Op: fsnotify.Chmod}}},
		{func() error { return os.Remove(policy) },
			[]fsnotify.Event{{Name: policy, Op: fsnotify.Remove}}},
		{func() error { return os.Remove(sub) }, // the watched directory itself
			[]fsnotify.Event{{Name: sub, Op: fsnotify.Remove}, {Name: sub, Op: fsnotify.Remove}}},
	}
	for i, st := range steps {
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		for _, want := range st.want {
			if ev := nextEvent(t, w); ev != want {
				t.Fatalf("step %d: event %v; want %v", i, ev, want)
			}
		}
	}
	// The removed directory's watch is gone: removing it again says so.
	if err := w.Remove(sub); err == nil {
		t.Error("Remove of a directory whose watch ended: no error")
	}
	if err := w.Add(filepath.Join(dir, "missing")); err == nil {
		t.Error("Add of a missing directory: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.events(); ok {
		t.Error("an event after Close")
	}
	if _, ok := <-w.errors(); ok {
		t.Error("an error after Close")
	}
	if err := w.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// More events than the kernel queues while nobody reads: the watch says
// events were lost (the reloader then looks again), and goes on.
func TestDirWatchOverflow(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip(err)
	}
	limit, err := strconv.Atoi(string(raw[:len(raw)-1]))
	if err != nil || limit > 1<<16 {
		t.Skipf("max_queued_events %q: too many to overflow here", raw)
	}
	dir := t.TempDir()
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	// Each chmod is one IN_ATTRIB, two files in turn so that the kernel
	// does not merge an event into the identical one before it. The read
	// loop holds one batch while its first event waits to be taken: up to
	// its buffer's worth of these short events, about 550, taken off the
	// kernel's queue.
	files := [2]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for _, f := range files {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range limit + 4096 {
		if err := os.Chmod(files[i%2], os.FileMode(0o600|i%2<<2)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-w.events():
			continue
		case err := <-w.errors():
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				t.Fatalf("error %v; want %v", err, fsnotify.ErrEventOverflow)
			}
		case <-deadline:
			t.Fatal("no overflow reported in 30 s")
		}
		break
	}
	// And it goes on.
	last := filepath.Join(dir, "after")
	if err := os.Mkdir(last, 0o700); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := nextEvent(t, w); ev.Name == last {
			return
		}
	}
}

// mustEvent reads the next event and fails t unless it is want.
func mustEvent(t *testing.T, w dirWatcher, want fsnotify.Event) {
	t.Helper()
	if ev := nextEvent(t, w); ev != want {
		t.Fatalf("event %v; want %v", ev, want)
	}
}

// The file watch sees every write to the file itself, a writer that keeps
// it open and a truncation included, and ends when the file moves away.
func TestDirWatchFileContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.AddFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("fallback: deny\n"); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: path, Op: fsnotify.Write})
	if err := os.Truncate(path, 3); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: path, Op: fsnotify.Write})
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: path, Op: fsnotify.Rename})
	// The watch does not follow the file: it ends, and says so.
	mustEvent(t, w, fsnotify.Event{Name: path, Op: fsnotify.Remove})
	if w.Watching(path) {
		t.Error("the watch of a file moved away is still alive")
	}
}

// A directory deleted and made again, watched again before the old watch's
// end has been read: the new watch keeps its name, reports under it, and
// Remove ends it.
func TestDirWatchAddedAgainAfterItsEnd(t *testing.T) {
	dir := t.TempDir()
	sub, other := filepath.Join(dir, "sub"), filepath.Join(dir, "other")
	for _, d := range []string{sub, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range []string{sub, other} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	// Nothing read yet: the old watch's end is still queued.
	if err := w.Add(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The old watch's end (IN_DELETE_SELF, IN_IGNORED) comes first, named
	// sub if the read loop decoded it before the Add, and ends nothing of
	// the new watch.
	for {
		ev := nextEvent(t, w)
		if ev == (fsnotify.Event{Name: sub, Op: fsnotify.Remove}) {
			continue
		}
		if want := (fsnotify.Event{Name: filepath.Join(sub, "x"), Op: fsnotify.Create}); ev != want {
			t.Fatalf("event %v; want %v", ev, want)
		}
		break
	}
	mustEvent(t, w, fsnotify.Event{Name: filepath.Join(sub, "x"), Op: fsnotify.Write})
	if !w.Watching(sub) {
		t.Fatal("the directory watched again is not watched")
	}
	if err := w.Remove(sub); err != nil {
		t.Fatalf("Remove of the directory watched again: %v", err)
	}
	// Its kernel watch is gone too: the next event is the other
	// directory's, which comes later.
	if err := os.WriteFile(filepath.Join(sub, "y"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(other, "z"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: filepath.Join(other, "z"), Op: fsnotify.Create})
}

// Two paths of one directory (a symlinked directory and its target, both
// in a policy's chain) share the kernel's watch: each gets the events, and
// removing one keeps the other's.
func TestDirWatchTwoNamesOneDirectory(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range []string{link, real} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(real, "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: filepath.Join(link, "a"), Op: fsnotify.Create})
	mustEvent(t, w, fsnotify.Event{Name: filepath.Join(real, "a"), Op: fsnotify.Create})
	if err := w.Remove(real); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(real, "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustEvent(t, w, fsnotify.Event{Name: filepath.Join(link, "b"), Op: fsnotify.Create})
	if !w.Watching(link) || w.Watching(real) {
		t.Errorf("watching %s %v, %s %v; want true, false", link, w.Watching(link), real, w.Watching(real))
	}
}

// A closed watcher refuses to watch: its descriptor's number may belong to
// another file by then.
func TestDirWatchAfterClose(t *testing.T) {
	w, err := newDirWatcher()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(dir); err == nil {
		t.Error("Add after Close: no error")
	}
	if err := w.AddFile(dir); err == nil {
		t.Error("AddFile after Close: no error")
	}
	if err := w.Remove(dir); err == nil {
		t.Error("Remove after Close: no error")
	}
}
