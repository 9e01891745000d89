package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Store holds the policy in force. Current is lock-free and safe for
// concurrent use; the snapshot it returns never changes, so a caller keeps
// deciding under one revision for as long as it holds it.
type Store struct {
	cur  atomic.Pointer[Policy]
	done chan struct{}
}

// NewStatic returns a store that always holds p.
func NewStatic(p *Policy) *Store {
	s := &Store{done: make(chan struct{})}
	s.cur.Store(p)
	close(s.done)
	return s
}

// Current returns the policy in force.
func (s *Store) Current() *Policy { return s.cur.Load() }

// Done is closed when the store stops following its file: when the context
// given to Watch is done, or at once for a static store.
func (s *Store) Done() <-chan struct{} { return s.done }

// reloadDebounce is how long the watcher waits after the last file event
// before it reads the file: editors and Kubernetes change a file in several
// steps, and only the end state matters.
const reloadDebounce = 100 * time.Millisecond

// Watch loads the policy file at path and keeps the store in step with it
// until ctx is done. A file that is missing or invalid at the start is an
// error that lists every problem (a refusal to start).
//
// It watches the file's directory, not the file, because editors save by
// writing a temporary file and renaming it over the old one, vim moves the
// old file to a backup first, and Kubernetes swaps a `..data` symlink that
// the watched path resolves through; after each burst of events (debounced)
// it reads the path again and compares the content it resolves to with the
// policy in force. A new content is validated fully and swapped in at once;
// an invalid one is logged with all its problems and changes nothing; a
// deleted file keeps the last good policy, and a file that reappears is
// loaded. Every outcome is logged as "policy reload" with the keys event,
// policy_file, ok, revision, old_revision, warnings and, on failure, error.
//
// onChange, when not nil, is called with the old and the new policy after
// each swap, only when the revision changed, on the watcher's goroutine and
// outside any lock: calls never overlap, and a slow onChange delays the
// next reload, not the callers of Current.
func Watch(ctx context.Context, path string, opts Options, logger *slog.Logger, onChange func(old, new *Policy)) (*Store, error) {
	return watch(ctx, path, opts, logger, onChange, reloadDebounce)
}

func watch(ctx context.Context, path string, opts Options, logger *slog.Logger, onChange func(old, new *Policy), debounce time.Duration) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	p, _, err := LoadFile(abs, opts)
	if err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching the policy file %s: %w", abs, err)
	}
	s := &Store{done: make(chan struct{})}
	s.cur.Store(p)
	rl := &reloader{
		store: s, path: abs, opts: opts, logger: logger, onChange: onChange,
		w: w, watched: map[string]bool{},
	}
	if _, err := rl.rewatch(); err != nil {
		w.Close()
		return nil, err
	}
	go rl.run(ctx, debounce)
	return s, nil
}

// reloader is the watcher goroutine's state; only that goroutine uses it.
type reloader struct {
	store    *Store
	path     string
	opts     Options
	logger   *slog.Logger
	onChange func(old, new *Policy)
	w        *fsnotify.Watcher
	watched  map[string]bool

	// The last failure logged, so that the same bad content or the same
	// missing file is reported once, not at every unrelated event.
	lastFailure string
}

// rewatch watches the directory of the path and, when the path is a symlink
// leading elsewhere, the directory of its target, so that an edit of the
// target is seen too. A directory that stops mattering is let go. It
// reports whether it added a directory: what changed there before the
// watch began was not seen, so the caller checks again.
func (rl *reloader) rewatch() (added bool, err error) {
	want := map[string]bool{filepath.Dir(rl.path): true}
	if target, err := filepath.EvalSymlinks(rl.path); err == nil {
		want[filepath.Dir(target)] = true
	}
	for d := range want {
		if rl.watched[d] {
			continue
		}
		if err := rl.w.Add(d); err != nil {
			if d == filepath.Dir(rl.path) {
				return added, fmt.Errorf("watching the policy directory %s: %w", d, err)
			}
			continue
		}
		rl.watched[d] = true
		added = true
	}
	for d := range rl.watched {
		if !want[d] {
			// Removing a watch on a directory that is gone fails; there is
			// nothing left to undo then.
			_ = rl.w.Remove(d)
			delete(rl.watched, d)
		}
	}
	return added, nil
}

func (rl *reloader) run(ctx context.Context, debounce time.Duration) {
	defer close(rl.store.done)
	defer rl.w.Close()
	// The first check covers what changed between the load and the watch.
	timer := time.NewTimer(debounce)
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case _, ok := <-rl.w.Events:
			if !ok {
				return
			}
			// Any event in a watched directory may change what the path
			// resolves to (a `..data` swap never names the file), and the
			// content comparison makes a needless check cheap.
			timer.Reset(debounce)
		case err, ok := <-rl.w.Errors:
			if !ok {
				return
			}
			rl.logger.Warn("policy watch error", "event", "policy_watch", "policy_file", rl.path, "error", err.Error())
		case <-timer.C:
			rl.check()
			added, err := rl.rewatch()
			if err != nil {
				rl.logger.Warn("policy watch error", "event", "policy_watch", "policy_file", rl.path, "error", err.Error())
			}
			if added {
				timer.Reset(debounce)
			}
		}
	}
}

// check reads the path and swaps in its policy if it is new and valid.
func (rl *reloader) check() {
	old := rl.store.Current()
	data, err := readFileLimited(rl.path)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = "the policy file is gone; keeping the last good policy " + old.Revision()
		} else {
			msg += "; keeping the last good policy " + old.Revision()
		}
		rl.fail("gone:"+msg, old, msg, nil)
		return
	}
	rev := revisionOf(data)
	if rev == old.Revision() {
		rl.lastFailure = ""
		return
	}
	p, warnings, err := Parse(rl.path, data, rl.opts)
	if err != nil {
		rl.fail("invalid:"+rev, old, err.Error()+"\n(keeping the last good policy "+old.Revision()+")", warnings)
		return
	}
	rl.lastFailure = ""
	rl.store.cur.Store(p)
	rl.logger.Info("policy reload",
		"event", "policy_reload",
		"policy_file", rl.path,
		"ok", true,
		"revision", p.Revision(),
		"old_revision", old.Revision(),
		"warnings", warningStrings(warnings))
	if rl.onChange != nil {
		rl.onChange(old, p)
	}
}

func (rl *reloader) fail(key string, old *Policy, msg string, warnings []Warning) {
	if key == rl.lastFailure {
		return
	}
	rl.lastFailure = key
	rl.logger.Error("policy reload",
		"event", "policy_reload",
		"policy_file", rl.path,
		"ok", false,
		"revision", old.Revision(),
		"old_revision", old.Revision(),
		"error", msg,
		"warnings", warningStrings(warnings))
}

func warningStrings(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}
