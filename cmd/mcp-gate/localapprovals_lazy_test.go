package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/elicitation"
)

// The local approval surface opens on first need, not at the start: no
// socket until an ask reaches it (Available), and a surface closed before
// that never opens, so a gate that is stopping does not bind a socket and
// refuses what still reaches it.
func TestLocalSurfaceOpensOnFirstNeed(t *testing.T) {
	dir, log, ctx := localApprovalsEnv(t)
	sockets := func() []string {
		socks, _ := filepath.Glob(filepath.Join(dir, "mcp-gate", "gate-*.sock"))
		return socks
	}

	l := startLocalApprovals(true, log)
	time.Sleep(50 * time.Millisecond) // an eager opening would have bound its socket by now
	if socks := sockets(); len(socks) != 0 {
		t.Fatalf("sockets before any ask: %v", socks)
	}
	if !l.Available(ctx) {
		t.Fatal("the surface did not open on first need")
	}
	if socks := sockets(); len(socks) != 1 {
		t.Fatalf("sockets after the first need: %v", socks)
	}
	l.Close()
	if socks := sockets(); len(socks) != 0 {
		t.Fatalf("sockets after Close: %v", socks)
	}

	l = startLocalApprovals(true, log)
	l.Close()
	if l.Available(ctx) {
		t.Fatal("a surface closed before its first need opened")
	}
	if a := l.Approve(ctx, elicitation.Request{}, time.Second); a.Outcome != elicitation.Unsupported {
		t.Fatalf("Approve on a surface closed before it opened: %+v", a)
	}
	if socks := sockets(); len(socks) != 0 {
		t.Fatalf("sockets of a surface closed before it opened: %v", socks)
	}
}
