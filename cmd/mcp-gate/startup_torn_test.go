package main

import (
	"errors"
	"testing"
)

// tearOnce writes half of its first write and fails it, then takes every
// write whole.
type tearOnce struct {
	out  []byte
	torn bool
}

func (w *tearOnce) Write(p []byte) (int, error) {
	if !w.torn {
		w.torn = true
		w.out = append(w.out, p[:len(p)/2]...)
		return len(p) / 2, errors.New("i/o timeout")
	}
	w.out = append(w.out, p...)
	return len(p), nil
}

// A stderr line cut short (a pipe nobody read for the audit's bound) is
// ended before the next line, so that an audit record after it is a line
// of its own, not glued to the torn one's start.
func TestSyncWriterEndsATornLine(t *testing.T) {
	w := &tearOnce{}
	s := &syncWriter{w: w}
	s.Write([]byte("level=INFO msg=\"operational line\"\n"))
	s.Write([]byte("{\"event\":\"decision\"}\n"))
	if got, want := string(w.out), "level=INFO msg=\"o\n{\"event\":\"decision\"}\n"; got != want {
		t.Fatalf("stderr reads %q; want %q", got, want)
	}
}
