package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// heldDisk holds every guard record's write until released.
type heldDisk struct {
	writing chan struct{}
	release chan struct{}
	once    sync.Once
}

func (d *heldDisk) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"event":"guard"`) {
		d.once.Do(func() { close(d.writing) })
		<-d.release
	}
	return len(p), nil
}

// A list's report of a server that did not start inspects its stderr and
// audits what the guard finds (upstreamWords). That ran under Gate.mu,
// which every call's forward takes (enter): an audit write that waited (a
// slow or full disk, a pipe not read) stopped every call of every session
// while a list was served.
func TestStartFailureAuditedOutsideGateLock(t *testing.T) {
	disk := &heldDisk{writing: make(chan struct{}), release: make(chan struct{})}
	g, err := New(Options{
		Servers:      []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted"}},
		Launcher:     &scriptLauncher{servers: map[string]scripted{}},
		StartTimeout: 10 * time.Second,
		Policy:       static(t, "version: 1\nfallback: deny\nallow: [\"mcp:**\"]\n"),
		Logger:       slog.New(slog.DiscardHandler),
		Audit:        audit.New(disk),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := g.NewSession()
	g.noteStart(s.childKey(), "s", errors.New("exit status 1; stderr: "+forgedWords))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.afterList(context.Background(), "tools/list", json.RawMessage(`{"tools":[]}`), nil)
	}()
	select {
	case <-disk.writing:
	case <-time.After(10 * time.Second):
		close(disk.release)
		t.Fatal("no guard record of the start failure's approval-shaped stderr")
	}
	locked := make(chan struct{})
	go func() {
		g.mu.Lock()
		g.mu.Unlock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(2 * time.Second):
		t.Error("Gate.mu is held while the start failure's guard record is written")
	}
	close(disk.release)
	<-done
	<-locked
}
