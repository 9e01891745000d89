//go:build unix

package statefile

import (
	"io/fs"
	"syscall"
)

// ownerKnown says whether file owners and modes mean what they do on
// Unix here.
const ownerKnown = true

// OwnerUID returns the uid that owns the file fi describes, and false
// where that cannot be told (not Unix, or fi not from the file system).
// It is the one reading of a file's owner for every check of whose a
// file or directory is (state directories, the approvals runtime
// directory, a host's project files).
func OwnerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
