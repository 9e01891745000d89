//go:build unix

package statefile

import (
	"io/fs"
	"syscall"
)

// ownerKnown says whether file owners and modes mean what they do on
// Unix here.
const ownerKnown = true

func ownerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
