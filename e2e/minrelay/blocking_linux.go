package main

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// openBlocking opens path in blocking mode. os.OpenFile would make a pipe
// non-blocking and poll it; a descriptor os.NewFile finds blocking stays
// so, and its reads and writes block their thread.
func openBlocking(path string, flag int) (*os.File, error) {
	fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// blockingPipes makes the upstream's stdin and stdout pipes in blocking
// mode (exec's own are non-blocking on our side), sets the child's ends on
// cmd and returns ours.
func blockingPipes(cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, error) {
	var up, down [2]int
	if err := syscall.Pipe2(up[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	if err := syscall.Pipe2(down[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	cmd.Stdin = os.NewFile(uintptr(up[0]), "upstream stdin")
	cmd.Stdout = os.NewFile(uintptr(down[1]), "upstream stdout")
	return os.NewFile(uintptr(up[1]), "to upstream"), os.NewFile(uintptr(down[0]), "from upstream"), nil
}
