package proxy

import (
	"bufio"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// lineLauncher is pipeLauncher with an upstream that writes its answers in
// parts, allocating nothing per call: what a relay allocates is then the
// gate's alone.
type lineLauncher struct{ pipeLauncher }

func (l *lineLauncher) Launch(_ context.Context, _ upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	return launchOverPipes(lim, func(in io.Reader, outW io.WriteCloser) {
		defer outW.Close()
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		w := bufio.NewWriterSize(outW, 64<<10)
		for sc.Scan() {
			line := sc.Text()
			var res string
			switch {
			case strings.Contains(line, `"initialize"`):
				res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
			case strings.Contains(line, `"tools/list"`):
				res = `{"tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
			case strings.Contains(line, `"tools/call"`):
				res = l.result
			default:
				continue
			}
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.WriteString(between(line, `"id":`, `,`))
			w.WriteString(`,"result":`)
			w.WriteString(res)
			w.WriteString("}\n")
			w.Flush()
		}
	})
}

// A 2025-era host's tools/call whose large result the gate relays as it
// is reuses the line it was read into (runRelayed marks it, the host's
// Stream recycles it once written: rpc/linepool.go), so a run of 1 MB
// results allocates far less than a line per call; and every result still
// arrives whole. Without the mark each call costs its line.
func TestRelayedResultReusesItsLine(t *testing.T) {
	text := strings.Repeat("0123456789abcdef", 1<<16) // 1 MB
	result := `{"content":[{"type":"text","text":"` + text + `"}]}`
	hostW, rd := pipedGate(t, &lineLauncher{pipeLauncher{rawLauncher{result: result}}}, 2<<20)
	want := `{"jsonrpc":"2.0","id":1,"result":` + result + "}\n"
	call := func(line string) string {
		if _, err := hostW.WriteString(line); err != nil {
			t.Fatal(err)
		}
		resp, err := rd.ReadSlice('\n')
		if err != nil {
			t.Fatal(err)
		}
		return string(resp)
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{}}}` + "\n"
	for range 3 {
		if got := call(line); got != want {
			t.Fatalf("the host got %d bytes, not the upstream's result", len(got))
		}
	}
	const n = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		resp, err := func() ([]byte, error) {
			if _, err := hostW.WriteString(line); err != nil {
				return nil, err
			}
			return rd.ReadSlice('\n')
		}()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp) != len(want) || resp[len(resp)-200] != want[len(want)-200] {
			t.Fatalf("the host got %d bytes, not the upstream's result", len(resp))
		}
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated a call", per)
	if per > uint64(len(text))/2 {
		t.Errorf("a relayed 1 MB result allocates %d bytes a call: its line was not reused", per)
	}
}
