//go:build !linux

package policy

func newDirWatcher() (dirWatcher, error) { return newFsnotifyWatcher() }
