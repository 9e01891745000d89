package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// BenchmarkModernRetry is a 2026-07-28 call whose 2026-07-28 upstream asks
// one question (a relayed round), in memory: the call and the retries,
// under an allow rule (call, then the retry answering the round) and an
// ask rule answered in the host's form (call, the approval's retry, then
// the round's), with an upstream requestState small and near the 8 KiB
// the gate carries (the relayed state the host echoes is then ~11 KiB,
// which each verification decodes). It uses only what the gate had before
// the retry path was verified once, so that it runs on both for a
// before/after.
func BenchmarkModernRetry(b *testing.B) {
	for _, pol := range []struct{ name, text string }{
		{"allow", allowAll},
		{"ask", "version: 1\nfallback: deny\nask: [mcp:s:t]\n"},
	} {
		for _, size := range []struct {
			name  string
			state string
		}{
			{"state=small", `"s"`},
			{"state=8KiB", `"` + strings.Repeat("x", 8000) + `"`},
		} {
			b.Run(pol.name+"/"+size.name, func(b *testing.B) {
				benchModernRetry(b, pol.text, size.state)
			})
		}
	}
}

func benchModernRetry(b *testing.B, policyText, upState string) {
	u := &modernUpstream{round: func(_ int, p json.RawMessage) string {
		if _, retry := rawjson.Get(p, "inputResponses"); !retry {
			return `{"resultType":"input_required","inputRequests":{"c":` + askColour + `},"requestState":` + upState + `}`
		}
		return `{"resultType":"complete","content":[{"type":"text","text":"done"}]}`
	}}
	o := Options{
		Servers:  []upstream.Config{{Name: "s", Type: upstream.TypeStdio, Command: "scripted", Protocol: upstream.ModernVersion}},
		Launcher: &scriptLauncher{servers: map[string]scripted{"s": u.serve}}, StartTimeout: 10 * time.Second,
		Policy: static(b, policyText), Logger: slog.New(slog.DiscardHandler),
	}
	g, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	a, c := rpc.Pipe(rpc.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess := g.NewSession()
	served := make(chan error, 1)
	go func() { served <- sess.ServeTransport(ctx, a) }()
	host := rpc.New(c, &modernHost{}, rpc.Options{Peer: "modern host", Logger: slog.New(slog.DiscardHandler)})
	go func() { _ = host.Run(ctx) }()
	defer func() { _ = host.Close(); cancel(); <-served }()

	meta := `"_meta":` + envelope(formCaps)
	call := func(extra string) string {
		res, err := host.Call(ctx, "tools/call", json.RawMessage(`{"name":"s__t","arguments":{"a":1},`+meta+extra+`}`))
		if err != nil {
			b.Fatal(err)
		}
		if rt, _ := rawjson.GetString(res, "resultType"); rt == "complete" {
			return ""
		}
		st, ok := rawjson.GetString(res, "requestState")
		if !ok {
			b.Fatalf("neither complete nor input-required: %s", res)
		}
		return st
	}
	retry := func(answers, st string) string {
		return call(`,"inputResponses":` + answers + `,"requestState":` + string(rawjson.AppendString(nil, st)))
	}
	const approve = `{"mcp-gate-approval":{"action":"accept","content":{"approve":true}}}`
	const colour = `{"mcp-gate-relayed-1":{"action":"accept","content":{"c":"red"}}}`
	b.ReportAllocs()
	for b.Loop() {
		st := call("")
		if strings.Contains(policyText, "ask:") {
			st = retry(approve, st)
		}
		if st == "" {
			b.Fatal("the upstream's round did not reach the host")
		}
		if retry(colour, st) != "" {
			b.Fatal("the retry did not complete")
		}
	}
}
