//go:build !unix

package main

import "errors"

// mkfifo: perf and its control FIFOs are Linux's.
func mkfifo(string) error { return errors.New("syscount needs Linux (perf)") }
