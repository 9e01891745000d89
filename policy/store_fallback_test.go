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
)

// failingAdd is a watcher whose every watch is refused with err.
type failingAdd struct {
	dirWatcher
	err error
}

func (f failingAdd) Add(dir string) error {
	return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: f.err}
}

// A system out of inotify instances or watches (their per-user limits are
// reached in practice) does not keep the gate from following its policy:
// the poll alone does, and the log says so. Any other failure to watch is
// still an error.
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
		{"another failure (EACCES)", func() (dirWatcher, error) { return nil, syscall.EACCES }, false},
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
					t.Fatal("a watcher that failed for another reason than resources: no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); <-s.Done() }()
			logs.mu.Lock()
			text := logs.buf.String()
			logs.mu.Unlock()
			if !strings.Contains(text, `"event":"policy_watch"`) || !strings.Contains(text, "looking at it every") {
				t.Errorf("the fallback to the poll is not logged:\n%s", text)
			}
			writeInPlace(t, path, genPolicyText(1)+"\n# longer")
			waitFor(t, "gen-1 through the poll", func() bool { return probe(s.Current()) == "gen-1" })
		})
	}
}
