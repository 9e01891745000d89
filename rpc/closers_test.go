package rpc

import "io"

// multiCloser closes each of its closers (the ends of a test's pipes). It
// is here, not beside its Linux-only users, because largeread_test.go
// uses it on every platform.
type multiCloser []io.Closer

func (m multiCloser) Close() error {
	for _, c := range m {
		c.Close()
	}
	return nil
}
