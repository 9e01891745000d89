package main

import (
	"context"
	"errors"
	"testing"
	"time"

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

// guardAhead runs preload with the server's name at every launch, beside
// the launch, whether the launch succeeds or not; without a preload it
// launches all the same.
func TestGuardAheadPreloads(t *testing.T) {
	got := make(chan string, 4)
	inner := &countingLauncher{}
	l := &guardAhead{Launcher: inner, preload: func(server string) { got <- server }}
	for _, name := range []string{"a", "b", "a"} {
		_, _ = l.Launch(context.Background(), upstream.Config{Name: name}, rpc.Limits{})
	}
	seen := map[string]int{}
	for range 3 {
		select {
		case s := <-got:
			seen[s]++
		case <-time.After(10 * time.Second):
			t.Fatalf("preload ran for %v only; want a, b and a again", seen)
		}
	}
	if seen["a"] != 2 || seen["b"] != 1 {
		t.Fatalf("preload ran for %v; want a twice and b once", seen)
	}
	if preloadPins(nil) != nil {
		t.Fatal("preloadPins without a store gave a preload; want none")
	}
	bare := &guardAhead{Launcher: inner}
	if _, err := bare.Launch(context.Background(), upstream.Config{Name: "c"}, rpc.Limits{}); err == nil || err.Error() != "not launched: c" {
		t.Fatalf("launch without a preload: error %v", err)
	}
}
