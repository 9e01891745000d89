package main

import (
	"errors"
	"io"
)

func check(args []string, stdout, stderr io.Writer) error {
	return errors.New("not yet wired")
}

func explain(args []string, stdout, stderr io.Writer) error {
	return errors.New("not yet wired")
}
