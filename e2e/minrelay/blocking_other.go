//go:build !linux

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
)

var errBlocking = errors.New("-blocking is measured on Linux only")

func openBlocking(string, int) (*os.File, error) { return nil, errBlocking }

func blockingPipes(*exec.Cmd) (io.WriteCloser, io.ReadCloser, error) {
	return nil, nil, errBlocking
}
