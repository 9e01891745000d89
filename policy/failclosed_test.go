package policy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFailClosedDeniesAndHidesEverything(t *testing.T) {
	p := FailClosed()
	for _, c := range []struct {
		kind Kind
		call Call
	}{
		{KindTool, Call{Server: "s", Name: "t"}},
		{KindTool, Call{Server: "a-b", Name: "x:y"}},
	} {
		if d := p.Decide(c.call); d.Verdict != Deny {
			t.Errorf("%+v: %v, want deny", c.call, d.Verdict)
		}
		if !p.Hidden(c.kind, c.call.Server, c.call.Name) {
			t.Errorf("%+v is listed", c.call)
		}
	}
	if !p.Hidden(KindPrompt, "s", "p") || !p.Hidden(KindResource, "s", "file:///etc/passwd") || !p.Hidden(KindResource, "s", "weird:thing") {
		t.Error("a prompt or resource is listed under the fail-closed policy")
	}
}

func TestWatchFailClosedRecovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nfallbak: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan *Policy, 1)
	s, err := WatchFailClosed(ctx, path, Options{}, nil, func(old, new *Policy) {
		if old == FailClosed() {
			changed <- new
		}
	})
	if err == nil || s == nil || s.Current() != FailClosed() {
		t.Fatalf("a broken file: store %v, err %v; want the fail-closed policy and the error", s, err)
	}
	if err := os.WriteFile(path, []byte("version: 1\nfallback: deny\nallow: [mcp:s:t]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-changed:
		if p.Decide(Call{Server: "s", Name: "t"}).Verdict != Allow || s.Current() != p {
			t.Fatal("the fixed policy is not in force")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("fixing the file did not replace the fail-closed policy")
	}
}
