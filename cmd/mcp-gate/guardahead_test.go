package main

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

type countingLauncher struct{ got []string }

func (c *countingLauncher) Launch(_ context.Context, cfg upstream.Config, _ rpc.Limits) (upstream.Connection, error) {
	c.got = append(c.got, cfg.Name)
	return nil, errors.New("not launched: " + cfg.Name)
}

// guardAhead passes every launch through, its error included.
func TestGuardAheadDelegates(t *testing.T) {
	inner := &countingLauncher{}
	l := &guardAhead{Launcher: inner}
	for _, name := range []string{"a", "b"} {
		if _, err := l.Launch(context.Background(), upstream.Config{Name: name}, rpc.Limits{}); err == nil || err.Error() != "not launched: "+name {
			t.Fatalf("launch %s: error %v", name, err)
		}
	}
	if len(inner.got) != 2 || inner.got[0] != "a" || inner.got[1] != "b" {
		t.Fatalf("launches passed on: %v", inner.got)
	}
}
