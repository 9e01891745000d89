// Package statefile reads and writes the gate's small per-user files (the
// catalog cache, the pins): private to the user (0700 directories, 0600
// files; a directory that is not the user's or that others may write is
// neither read nor written), written whole by rename so that a reader, or another gate of the
// same user, never sees half a file, and read with a size bound so that a
// file grown by mistake or by an attacker costs nothing.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// ErrTooLarge is returned by Read for a file over its bound.
var ErrTooLarge = errors.New("file is larger than the gate reads")

// ErrNotPrivate is the error for a directory that is not the user's own
// or that others may write: anyone who can write it can change what the
// gate reads there (move a pin, reset one by deleting its file, put
// entries in the catalog cache), and it is used neither to read nor to
// write.
var ErrNotPrivate = errors.New("directory is not private to this user")

// OpenDir opens dir as a root for the files in it, and refuses it
// (ErrNotPrivate) unless it is a directory owned by this user that
// neither group nor others may write. The check is made on the directory
// opened, not on its name, so a directory swapped in after the check (by
// whoever can write its parent) is never the one read or written; files
// are then opened through the root, which follows no symlink out of it.
// A missing directory is an error satisfying errors.Is(err,
// fs.ErrNotExist).
func OpenDir(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	fi, err := root.Stat(".")
	if err == nil {
		err = checkPrivate(dir, fi)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

func checkPrivate(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", dir, ErrNotPrivate)
	}
	if uid, ok := OwnerUID(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s: %w: it belongs to uid %d (yours is %d); remove it, or point the XDG base directory elsewhere", dir, ErrNotPrivate, uid, os.Getuid())
	}
	if ownerKnown && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s: %w: mode %#o lets others write it (run chmod 700 %s)", dir, ErrNotPrivate, fi.Mode().Perm(), dir)
	}
	return nil
}

// Read returns the content of path, at most max bytes, from a directory
// OpenDir accepts. A missing file or directory is an error satisfying
// errors.Is(err, fs.ErrNotExist); a larger one is ErrTooLarge, without
// reading it whole.
func Read(path string, max int64) ([]byte, error) {
	root, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(filepath.Base(path))
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

// Stat is os.Stat of path, in a directory OpenDir accepts: a file that is
// missing from a directory others could write is not taken for "none".
func Stat(path string) (fs.FileInfo, error) {
	root, err := OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Stat(filepath.Base(path))
}

// MkdirPrivate creates dir and its parents, the last one 0700. An existing
// directory of the user's that others may read is tightened to 0700; one
// that is not the user's, or that group or others may write, is refused
// (ErrNotPrivate) and left as it is: what is in it may have been written
// by someone else, and tightening it would make that the gate's own.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	root, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(".")
	if err != nil {
		return err
	}
	if ownerKnown && fi.Mode().Perm()&0o077 != 0 {
		if err := root.Chmod(".", 0o700); err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
	}
	return nil
}

// WriteAtomic writes data to path by writing a temporary file in the same
// directory (0600), syncing it and renaming it over path: readers see the
// old content or the new, never a mix, and two writers racing leave one
// whole file. The directory must be private (MkdirPrivate), and both the
// temporary file and the rename are made in the directory checked.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := MkdirPrivate(dir); err != nil {
		return err
	}
	root, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	base := filepath.Base(path)
	var f *os.File
	var tmp string
	for range 100 {
		tmp = "." + base + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
		f, err = root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			root.Remove(tmp)
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
	if err := root.Rename(tmp, base); err != nil {
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
