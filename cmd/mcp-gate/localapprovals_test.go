package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// localApprovalsEnv gives a test a runtime directory of its own (short:
// a socket path has a length limit), a logger and a context, and returns
// the directory.
func localApprovalsEnv(t *testing.T) (string, *slog.Logger, context.Context) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the local approval surface needs Linux peer credentials")
	}
	dir, err := os.MkdirTemp("", "la")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_RUNTIME_DIR", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return dir, slog.New(slog.DiscardHandler), ctx
}

// The local approval surface is there once Available says so, its socket
// goes with Close, and one that cannot open is not available and refuses
// what reaches it.
func TestLocalSurfaceOpensAndCloses(t *testing.T) {
	dir, log, ctx := localApprovalsEnv(t)
	l := startLocalApprovals(true, log)
	if !l.Available(ctx) {
		t.Fatal("the surface did not open")
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "mcp-gate", "gate-*.sock"))
	if len(socks) != 1 {
		t.Fatalf("sockets after opening: %v", socks)
	}
	l.Close()
	if socks, _ = filepath.Glob(filepath.Join(dir, "mcp-gate", "gate-*.sock")); len(socks) != 0 {
		t.Fatalf("sockets after Close: %v", socks)
	}

	// A runtime directory that is a file: the surface cannot open.
	bad := filepath.Join(dir, "file")
	if err := os.WriteFile(bad, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", bad)
	l = startLocalApprovals(true, log)
	defer l.Close()
	if l.Available(ctx) {
		t.Fatal("a surface that cannot open reports itself available")
	}
	if a := l.Approve(ctx, elicitation.Request{}, time.Second); a.Outcome != elicitation.Unsupported {
		t.Fatalf("Approve on a surface that did not open: %+v", a)
	}
	if startLocalApprovals(false, log) != nil || localApprover(nil) != nil {
		t.Fatal("--local-approvals=false still runs a surface")
	}
}
