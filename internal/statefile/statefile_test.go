package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A state directory another user made first (XDG_STATE_HOME or
// XDG_CACHE_HOME in a shared place, a home anyone may write) or one others
// may write was read and written as the gate's own (a directory of the
// user's that others could write was tightened and then trusted): whoever
// could write it moved a pin (its digest), reset one (deleting its file,
// read as "nothing pinned") or put entries in the catalog cache. Neither
// is read nor written now; a directory of the user's that others may only
// read is tightened when written.
func TestDirectoryNotPrivateRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix owners and modes")
	}
	base := t.TempDir()
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(loose, "srv.json")
	if err := os.WriteFile(file, []byte("forged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(file, 100); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("Read in a directory others may write: %v; expected ErrNotPrivate", err)
	}
	if _, err := Stat(filepath.Join(loose, "gone.json")); !errors.Is(err, ErrNotPrivate) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing file in a directory others may write: %v; expected ErrNotPrivate, not a missing file", err)
	}
	// Nor written: tightening it would make what others wrote there (a
	// file deleted, a file forged beside) the gate's own.
	if err := WriteAtomic(file, []byte("mine")); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("WriteAtomic in a directory others may write: %v", err)
	}
	if err := MkdirPrivate(loose); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("MkdirPrivate of a directory others may write: %v", err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o777 {
		t.Errorf("a directory others may write was changed to %#o", fi.Mode().Perm())
	}
	// A directory of the user's that others may only read is tightened by
	// a write, then read.
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(file, []byte("mine")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o700 {
		t.Errorf("the gate's own directory left at %#o", fi.Mode().Perm())
	}
	if b, err := Read(file, 100); err != nil || string(b) != "mine" {
		t.Errorf("Read after the write: %q %v", b, err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v %v", fi, err)
	}

	// A symlink in the directory is not followed out of it.
	outside := filepath.Join(base, "outside.json")
	if err := os.WriteFile(outside, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(loose, "link.json")); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(filepath.Join(loose, "link.json"), 100); err == nil {
		t.Errorf("Read followed a symlink out of the directory: %q", b)
	}

	// Another user's directory: refused even at 0700, and not chmodded.
	if os.Getuid() != 0 {
		t.Skip("making a directory of another user needs root")
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(theirs, "srv.json"), []byte("forged"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{theirs, filepath.Join(theirs, "srv.json")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(filepath.Join(theirs, "srv.json"), 100); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("Read in another user's directory: %v", err)
	}
	if err := WriteAtomic(filepath.Join(theirs, "srv.json"), []byte("x")); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("WriteAtomic in another user's directory: %v", err)
	}
	if err := MkdirPrivate(theirs); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("MkdirPrivate of another user's directory: %v", err)
	}
	if _, err := Stat(filepath.Join(theirs, "gone.json")); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("Stat in another user's directory: %v", err)
	}
}

// A missing directory is a missing file, as before.
func TestMissingDirectoryIsMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none", "srv.json")
	if _, err := Read(p, 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read: %v", err)
	}
	if _, err := Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat: %v", err)
	}
}
