package proxy

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// pipeLauncher is rawLauncher over OS pipes: the upstream's Stream writes
// and reads in direct mode, as a child's pipes are.
type pipeLauncher struct{ rawLauncher }

func (l *pipeLauncher) Launch(_ context.Context, _ upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
	return launchOverPipes(lim, func(in io.Reader, out io.WriteCloser) {
		io.Copy(out, l.serve(in))
		out.Close()
	})
}

// launchOverPipes starts a test upstream over OS pipes: serve reads what
// the gate writes from in and writes its answers to out, on a goroutine
// of its own, until in ends.
func launchOverPipes(lim rpc.Limits, serve func(in io.Reader, out io.WriteCloser)) (upstream.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &rawProcess{Stream: rpc.NewStream(outR, inW, nil, lim), exited: make(chan struct{})}
	pr, pw := io.Pipe()
	p.in = pw
	go func() { io.Copy(pw, inR); pw.Close() }()
	go serve(pr, outW)
	go func() { <-p.exited; inR.Close(); outR.Close() }()
	return p, nil
}

// serve is rawLauncher's upstream over r, its answers read from the
// returned reader.
func (l *pipeLauncher) serve(r io.Reader) io.Reader {
	ar, aw := io.Pipe()
	go func() {
		defer aw.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		w := bufio.NewWriter(aw)
		for sc.Scan() {
			line := sc.Text()
			id := between(line, `"id":`, `,`)
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
			w.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":` + res + "}\n")
			w.Flush()
		}
	}()
	return ar
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}

// BenchmarkRelayCallDirect is BenchmarkRelayCall with the host and the
// upstream on OS pipes, so that both Streams read and write in direct
// mode, as the stdio gate's do: the allocations per call of the path the
// real process takes (the in-memory host and upstream allocate too: the
// gate's own are those of -memprofile under proxy/ and rpc/).
//
//	go test -run '^$' -bench RelayCallDirect -benchmem ./proxy
func BenchmarkRelayCallDirect(b *testing.B) {
	hostW, rd := pipedGate(b, &pipeLauncher{rawLauncher{result: `{"content":[{"type":"text","text":"ok"}]}`}}, 1<<20)
	call := func(line string) {
		if _, err := hostW.WriteString(line); err != nil {
			b.Fatal(err)
		}
		resp, err := rd.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(resp), `"error"`) || strings.Contains(string(resp), `isError`) {
			b.Fatalf("unexpected response: %s", resp)
		}
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}` + "\n")
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{"text":"hello"}}}` + "\n"
	for range 10 {
		call(line)
	}
	b.ReportAllocs()
	for b.Loop() {
		call(line)
	}
}

// pipedGate serves a gate under allowAll with one upstream, "up", from l,
// to a host on OS pipes, as a stdio gate is: the host writes requests to
// hostW and reads the answers from rd (a reader of readSize bytes).
func pipedGate(tb testing.TB, l upstream.Launcher, readSize int) (hostW *os.File, rd *bufio.Reader) {
	tb.Helper()
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "up", Type: upstream.TypeStdio, Command: "in-memory"}},
		Launcher: l,
		Policy:   static(tb, allowAll),
		Logger:   slog.New(slog.DiscardHandler),
		Audit:    audit.New(io.Discard),
	})
	if err != nil {
		tb.Fatal(err)
	}
	gateR, hostW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	hostR, gateW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	go g.Serve(context.Background(), gateR, gateW)
	tb.Cleanup(func() { hostW.Close(); time.Sleep(10 * time.Millisecond) })
	return hostW, bufio.NewReaderSize(hostR, readSize)
}
