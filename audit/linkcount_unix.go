//go:build unix && !(linux && (amd64 || arm64))

package audit

import (
	"errors"
	"os"
	"syscall"
)

// linkCount returns f's link count.
func linkCount(f *os.File) (uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no link count")
	}
	return uint64(st.Nlink), nil
}
