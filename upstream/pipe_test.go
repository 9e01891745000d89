package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// pipeServer is an upstream written on the gate's own message layer, served
// by an upstreamtest.PipeLauncher: no process, no byte stream.
type pipeServer struct {
	mu     sync.Mutex
	server *rpc.Conn
}

func (s *pipeServer) Start(c *rpc.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.server = c
}

func (s *pipeServer) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	switch req.Method {
	case "initialize":
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"pipe","version":"1"}}`), nil
	case "tools/call":
		var p struct{ Name string }
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		switch p.Name {
		case "exact":
			// Bytes a decoder would change: a number beyond float64, spacing,
			// an escape.
			return json.RawMessage(`{"content":[{"type":"text","text":"\u00e9"}], "n" : 9007199254740993}`), nil
		case "big":
			return json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("b", 4096) + `"}]}`), nil
		case "exit":
			s.mu.Lock()
			c := s.server
			s.mu.Unlock()
			go c.CloseWithError(errors.New("the server gave up"))
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "no %s", req.Method)
}

func (s *pipeServer) HandleNotification(*rpc.Message) {}

// The pool runs a server that is not a process: the Launcher's connection is
// the seam, and the pool's limits reach the transport through it.
func TestPoolOverPipeLauncher(t *testing.T) {
	l := &upstreamtest.PipeLauncher{Servers: map[string]rpc.Handler{"s": &pipeServer{}}}
	cfgs := []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "in-memory"}}
	p := newPool(t, cfgs, l, func(o *upstream.PoolOptions) { o.MaxMessageBytes = 1024 })
	s := session(t, p, "s")
	if !s.Caps.Tools || !s.Caps.ToolsListChanged || s.ProtocolVersion != "2025-11-25" {
		t.Errorf("session %+v; want the capabilities the server declared", s.Caps)
	}
	ctx := context.Background()
	res, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"exact"}`))
	if want := `{"content":[{"type":"text","text":"\u00e9"}], "n" : 9007199254740993}`; err != nil || string(res) != want {
		t.Errorf("Call = %s, %v; want the result byte for byte: %s", res, err, want)
	}
	// The pool's MaxMessageBytes bounds what the connection accepts: the
	// oversized result fails its call, and the session goes on.
	if _, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"big"}`)); err == nil || !strings.Contains(err.Error(), "exceeds the limit of 1024 bytes") {
		t.Errorf("Call of an oversized result = %v; want the limit named", err)
	}
	if res, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"exact"}`)); err != nil || len(res) == 0 {
		t.Errorf("Call after the oversized result = %s, %v", res, err)
	}
	// The server ending ends the session, with the connection's exit error.
	_, err = s.Call(ctx, "tools/call", json.RawMessage(`{"name":"exit"}`))
	var werr *rpc.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, `upstream "s" is not available`) {
		t.Errorf("Call while the server ends = %v; want the session's end", err)
	}
	wait(t, s.Done(), "session end")
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "the server gave up") {
		t.Errorf("session Err = %v; want the server's exit error", err)
	}
	eventually(t, "the pool records the end", func() bool {
		err := p.LastError("", "s")
		return err != nil && strings.Contains(err.Error(), "the server gave up")
	})
}
