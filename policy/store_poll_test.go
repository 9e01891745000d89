package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An edit that sends the watcher no event about the policy's path (here a
// write through a hard link in another directory, as on file systems that
// do not pass events on) still applies: the watcher also looks at the file.
func TestWatchSeesEditWithoutEvent(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	path := filepath.Join(a, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	other := filepath.Join(b, "same-file.yaml")
	if err := os.Link(path, other); err != nil {
		t.Skip("no hard links here:", err)
	}
	s, _, _ := startWatch(t, path, nil)
	waitFor(t, "the first policy", func() bool { return probe(s.Current()) == "gen-0" })
	// Past the watcher's first look, which would see any change anyway.
	time.Sleep(5 * testDebounce)
	writeInPlace(t, other, genPolicyText(1))
	waitFor(t, "the edit through the other link", func() bool { return probe(s.Current()) == "gen-1" })
}
