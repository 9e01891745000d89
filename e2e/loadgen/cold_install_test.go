package loadgen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Install writes a copy of the binary, executable, and never over a file
// that is there; InstallInto points each path given at its copy and leaves
// an empty one alone.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "linked")
	data := bytes.Repeat([]byte("\x7fELF binary bytes "), 10_000)
	if err := os.WriteFile(src, data, 0o700); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "installed")
	if err := Install(dst, src); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy differs from the binary (%d bytes of %d, %v)", len(got), len(data), err)
	}
	// 0755 as the umask lets it: the owner's bits are what running it needs.
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm()&0o700 != 0o700 || fi.Mode().Perm()&^0o755 != 0 {
		t.Fatalf("the copy's mode: %v (%v), want 0755 less the umask", fi.Mode(), err)
	}
	if err := Install(dst, src); err == nil {
		t.Fatal("installing over an existing file succeeded; want an error")
	}
	if err := Install(filepath.Join(dir, "other"), filepath.Join(dir, "missing")); err == nil {
		t.Fatal("installing a missing binary succeeded; want an error")
	}

	out := filepath.Join(dir, "into")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	given, empty := src, ""
	if err := InstallInto(out, &given, &empty); err != nil {
		t.Fatal(err)
	}
	if empty != "" || filepath.Dir(given) != out || given == src {
		t.Fatalf("InstallInto set the paths to %q and %q; want a copy in %s and the empty one left", given, empty, out)
	}
	if got, err := os.ReadFile(given); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("InstallInto's copy differs from the binary (%v)", err)
	}
}
