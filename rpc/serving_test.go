package rpc

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// A handler's context says which of the peer's requests it serves, and on
// which transport: another Conn's transport does not see it as its own.
func TestServing(t *testing.T) {
	x, y := Pipe(Limits{})
	other, _ := Pipe(Limits{})
	log := slog.New(slog.DiscardHandler)
	type seen struct {
		id        string
		ok, cross bool
		copied    string
	}
	got := make(chan seen, 1)
	server := New(y, funcs{call: func(ctx context.Context, req *Message) (json.RawMessage, error) {
		id, ok := Serving(ctx, y)
		_, cross := Serving(ctx, other)
		copied, _ := Serving(WithServingOf(context.Background(), ctx), y)
		got <- seen{string(id), ok, cross, string(copied)}
		return json.RawMessage(`{}`), nil
	}}, Options{Peer: "client", Logger: log})
	client := New(x, funcs{}, Options{Peer: "server", Logger: log})
	go server.Run(context.Background())
	go client.Run(context.Background())
	defer server.Close()
	defer client.Close()
	if _, err := client.Call(context.Background(), "m", nil); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if !s.ok || s.id != "1" || s.cross || s.copied != "1" {
		t.Fatalf("Serving: %+v; want id 1 on its own transport only, kept by WithServingOf", s)
	}
	if _, ok := Serving(context.Background(), y); ok {
		t.Fatal("a context of no handler serves something")
	}
}
