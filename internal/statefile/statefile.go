// Package statefile reads and writes the gate's small per-user files (the
// catalog cache, the pins): private to the user (0700 directories, 0600
// files), written whole by rename so that a reader, or another gate of the
// same user, never sees half a file, and read with a size bound so that a
// file grown by mistake or by an attacker costs nothing.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrTooLarge is returned by Read for a file over its bound.
var ErrTooLarge = errors.New("file is larger than the gate reads")

// Read returns the content of path, at most max bytes. A missing file is
// an error satisfying errors.Is(err, fs.ErrNotExist); a larger one is
// ErrTooLarge, without reading it whole.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", path, ErrTooLarge, max)
	}
	return data, nil
}

// MkdirPrivate creates dir and its parents, the last one 0700. An existing
// directory is used as it is, tightened to 0700 when it is the gate's own
// (owned by the user) and looser.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, 0o700)
	}
	return nil
}

// WriteAtomic writes data to path by writing a temporary file in the same
// directory (0600), syncing it and renaming it over path: readers see the
// old content or the new, never a mix, and two writers racing leave one
// whole file.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := MkdirPrivate(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok = true
	return nil
}

// UserDir is the per-user base directory named by the environment variable
// env (an XDG base directory), or fallback under the home directory when
// it is unset or not absolute (the XDG rule), with "mcp-gate" appended.
func UserDir(env, fallback string) (string, error) {
	if d := os.Getenv(env); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcp-gate"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no $%s and no home directory: %w", env, err)
	}
	return filepath.Join(home, fallback, "mcp-gate"), nil
}
