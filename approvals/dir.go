package approvals

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mcp-gate/mcp-gate/internal/statefile"
)

// RuntimeDir returns the directory where this user's gates put their
// sockets, creating it (mode 0700) if needed: $XDG_RUNTIME_DIR/mcp-gate,
// else mcp-gate-<uid> in the system's temporary directory. A directory
// that is a symlink, not ours, or open to group or others is refused: in a
// shared temporary directory another user could have made it first.
func RuntimeDir() (string, error) {
	dir := ""
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		dir = filepath.Join(x, "mcp-gate")
	} else {
		dir = filepath.Join(os.TempDir(), "mcp-gate-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("approvals: creating the runtime directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkDir refuses a directory that is not a real directory of this user
// with mode 0700.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("approvals: runtime directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("approvals: the runtime directory %s is %s; expected a directory of yours with mode 0700", dir, fi.Mode().Type())
	}
	uid, ok := statefile.OwnerUID(fi)
	if !ok { // not Unix: the directory is refused
		return fmt.Errorf("approvals: cannot read the owner of %s", dir)
	}
	if uid != os.Getuid() {
		return fmt.Errorf("approvals: the runtime directory %s belongs to uid %d; expected yours (%d): remove it or set XDG_RUNTIME_DIR", dir, uid, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("approvals: the runtime directory %s has mode %#o; expected 0700 (run chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}
