//go:build unix

package hostconfig

import (
	"io/fs"
	"os"
	"syscall"
)

// notUsers says whether a file is another user's, or one anyone may
// write. (Group write is common for the user's own files: a umask of 002
// with a group of the user's own.)
func notUsers(fi fs.FileInfo) bool {
	if fi.Mode().Perm()&0o002 != 0 {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Getuid()
}
