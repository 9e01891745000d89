package main

import (
	"context"
	"io"
)

func doctor(ctx context.Context, args []string, stdout, stderr io.Writer) error { return nil }
