package policy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// With the poll off, the events alone see every edit of the policy: in
// place, by rename, through a writer that keeps the file open (the writes
// the Linux directory watch leaves out, seen through the file's own watch),
// and after the directory was deleted and made again, or moved away and
// made again (a watch that ended is started again). Both watchers: this
// system's and fsnotify's, which other systems use.
func TestWatchEventsAloneSeeEveryEdit(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() (dirWatcher, error)
	}{{"native", newDirWatcher}, {"fsnotify", newFsnotifyWatcher}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gate")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "policy.yaml")
			writeInPlace(t, path, genPolicyText(0))
			wc := watchAfter(testDebounce)
			wc.pollEvery, wc.newWatcher = 0, tc.new
			ctx, cancel := context.WithCancel(context.Background())
			s, err := watch(ctx, path, Options{}, slog.New(slog.DiscardHandler), nil, wc)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			defer func() { cancel(); <-s.Done() }()
			applied := func(gen int) {
				t.Helper()
				want := fmt.Sprintf("gen-%d", gen) // the rule probe reports
				waitFor(t, want, func() bool { return probe(s.Current()) == want })
			}

			writeInPlace(t, path, genPolicyText(1))
			applied(1)
			writeRename(t, path, genPolicyText(2))
			applied(2)

			// A writer that keeps the file open: no close, no name changed.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(genPolicyText(3)); err != nil {
				t.Fatal(err)
			}
			applied(3)
			f.Close()

			// The directory deleted and made again.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeInPlace(t, path, genPolicyText(4))
			applied(4)
			writeRename(t, path, genPolicyText(5))
			applied(5)

			// The directory moved away and made again.
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeInPlace(t, path, genPolicyText(6))
			applied(6)
			writeRename(t, path, genPolicyText(7))
			applied(7)
		})
	}
}
