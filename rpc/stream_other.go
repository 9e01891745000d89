//go:build !linux

package rpc

import (
	"io"
	"os"
)

// nonblockingWriter: elsewhere every write goes through the Stream's writer
// goroutine.
func nonblockingWriter(io.Writer) func([][]byte) (int, error) { return nil }

// directReader: elsewhere a Stream reads through os.File.
func directReader(r io.Reader) io.Reader { return r }

// ownNonblocking: elsewhere a Stream reads with its reader goroutine.
func ownNonblocking(*os.File) bool { return false }
