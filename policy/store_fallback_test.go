package policy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsnotify/fsnotify"
)

// failingAdd is a watcher whose every watch is refused with err.
type failingAdd struct {
	dirWatcher
	err error
}

// endingWatcher is a watcher whose events end at once, as when a read of
// the inotify instance fails.
type endingWatcher struct{ dirWatcher }

func (endingWatcher) events() <-chan fsnotify.Event {
	c := make(chan fsnotify.Event)
	close(c)
	return c
}

func (f failingAdd) Add(dir string) error {
	return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: f.err}
}

// A policy that loaded but cannot be watched is still followed, by the
// poll alone, and the log says so: a system out of inotify instances or
// watches (their per-user limits are reached in practice), a directory the
// gate may not read, inotify denied. A missing directory is still an
// error. A watch that ends by itself leaves the poll running.
func TestWatchOutOfWatchesPolls(t *testing.T) {
	for _, tc := range []struct {
		name       string
		newWatcher func() (dirWatcher, error)
		polls      bool
	}{
		{"no instance (EMFILE)", func() (dirWatcher, error) { return nil, fmt.Errorf("inotify: %w", syscall.EMFILE) }, true},
		{"no watch (ENOSPC)", func() (dirWatcher, error) {
			w, err := newDirWatcher()
			return failingAdd{w, syscall.ENOSPC}, err
		}, true},
		{"fsnotify, no instance", func() (dirWatcher, error) { return nil, syscall.EMFILE }, true},
		{"inotify denied (EACCES)", func() (dirWatcher, error) { return nil, syscall.EACCES }, true},
		{"directory unreadable (EACCES on the watch)", func() (dirWatcher, error) {
			w, err := newDirWatcher()
			return failingAdd{w, syscall.EACCES}, err
		}, true},
		{"the watch ends by itself", func() (dirWatcher, error) {
			w, err := newDirWatcher()
			return endingWatcher{w}, err
		}, true},
		{"a missing directory (ENOENT)", func() (dirWatcher, error) {
			w, err := newDirWatcher()
			return failingAdd{w, syscall.ENOENT}, err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			writeInPlace(t, path, genPolicyText(0))
			logs := &logBuffer{}
			wc := watchAfter(testDebounce)
			wc.pollEvery, wc.newWatcher = 0, tc.newWatcher // the poll is the fallback's own
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := watch(ctx, path, Options{}, slog.New(slog.NewJSONHandler(logs, nil)), nil, wc)
			if !tc.polls {
				if err == nil {
					cancel()
					<-s.Done()
					t.Fatal("a missing directory: no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); <-s.Done() }()
			writeInPlace(t, path, genPolicyText(1)+"\n# longer")
			waitFor(t, "gen-1 through the poll", func() bool { return probe(s.Current()) == "gen-1" })
			logs.mu.Lock()
			text := logs.buf.String()
			logs.mu.Unlock()
			if !strings.Contains(text, `"event":"policy_watch"`) || !strings.Contains(text, "looking at it") {
				t.Errorf("the fallback to the poll is not logged:\n%s", text)
			}
		})
	}
}
