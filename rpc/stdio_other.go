//go:build !linux

package rpc

import (
	"io"
	"os"
)

// Reopening a pipe needs /proc/self/fd, and polling a socket without
// changing its flags needs nested epoll: elsewhere stdin and stdout keep
// their blocking reads and writes.
func pollableIn(*os.File) (io.Reader, io.Closer)  { return nil, nil }
func pollableOut(*os.File) (io.Writer, io.Closer) { return nil, nil }

// pipeGrower: F_SETPIPE_SZ is Linux's; elsewhere pipes keep their size.
func pipeGrower(any) func() { return nil }
