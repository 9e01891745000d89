package approvals

import (
	"os"
	"testing"
)

// shortDir is a 0700 directory with a short path (a unix socket's path is
// at most 107 bytes; t.TempDir's can be longer).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
