//go:build unix

package main

import "syscall"

// mkfifo makes the FIFO perf's control commands and acknowledgements go
// through.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
