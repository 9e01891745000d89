package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// modernRawLauncher is rawLauncher's upstream at revision 2026-07-28:
// it answers server/discover, and marks every result complete.
type modernRawLauncher struct{ result string }

func (l *modernRawLauncher) Launch(_ context.Context, _ upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &rawProcess{Stream: rpc.NewStream(outR, inW, nil, lim), in: inW, exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		defer outW.Close()
		sc := bufio.NewScanner(inR)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		w := bufio.NewWriter(outW)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage
				Method string
			}
			_ = json.Unmarshal(sc.Bytes(), &m)
			var res string
			switch m.Method {
			case "server/discover":
				res = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
			case "tools/list":
				res = `{"resultType":"complete","tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
			case "tools/call":
				res = `{"resultType":"complete",` + l.result[1:]
			default:
				continue
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, res)
			w.Flush()
		}
	}()
	return p, nil
}

// modernEnvelope is the _meta envelope of the benchmark's 2026-07-28 host.
const modernEnvelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// BenchmarkRelayCallModern is BenchmarkRelayCall for a 2026-07-28 host
// (no initialize, the envelope on every request), to an upstream of the
// older revision (which may ask mid-call, so the call must be able to
// park) and to one of 2026-07-28 (which cannot).
//
//	go test -run '^$' -bench RelayCallModern -benchmem -benchtime 20000x ./proxy
func BenchmarkRelayCallModern(b *testing.B) {
	const result = `{"content":[{"type":"text","text":"ok"}]}`
	for _, up := range []struct {
		name     string
		launcher upstream.Launcher
		protocol string
	}{
		{"upstream=2025-11-25", &rawLauncher{result: result}, ""},
		{"upstream=2026-07-28", &modernRawLauncher{result: result}, upstream.ModernVersion},
	} {
		b.Run(up.name, func(b *testing.B) {
			g, err := New(Options{
				Servers:  []upstream.Config{{Name: "up", Type: upstream.TypeStdio, Command: "in-memory", Protocol: up.protocol}},
				Launcher: up.launcher,
				Policy:   static(b, allowAll),
				Logger:   slog.New(slog.DiscardHandler),
				Audit:    audit.New(io.Discard),
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(g.Close)
			hostR, gateW := io.Pipe()
			gateR, hostW := io.Pipe()
			go g.Serve(context.Background(), gateR, gateW)
			b.Cleanup(func() { hostW.Close() })
			rd := bufio.NewReaderSize(hostR, 1<<20)
			call := func(line string) {
				if _, err := io.WriteString(hostW, line+"\n"); err != nil {
					b.Fatal(err)
				}
				resp, err := rd.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(string(resp), `"error"`) || strings.Contains(string(resp), `isError`) || !strings.Contains(string(resp), `"complete"`) {
					b.Fatalf("unexpected response: %s", resp)
				}
			}
			line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernEnvelope + `,"name":"up__get","arguments":{"text":"hello"}}}`
			for range 10 {
				call(line)
			}
			time.Sleep(10 * time.Millisecond) // the first calls' listing settles
			b.ReportAllocs()
			for b.Loop() {
				call(line)
			}
		})
	}
}
