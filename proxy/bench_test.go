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

	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// rawLauncher starts an in-memory upstream that answers initialize,
// tools/list and every tools/call with fixed bytes, so that a benchmark
// measures the gate's hop and nothing of an SDK.
type rawLauncher struct{ result string }

type rawProcess struct {
	*rpc.Stream
	in     *io.PipeWriter
	exited chan struct{}
}

func (p *rawProcess) Stop(time.Duration)      { p.in.Close(); p.Stream.Close() }
func (p *rawProcess) Exited() <-chan struct{} { return p.exited }
func (p *rawProcess) ExitErr() error          { return nil }

func (l *rawLauncher) Launch(_ context.Context, _ upstream.Config, lim rpc.Limits) (upstream.Connection, error) {
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
			case "initialize":
				res = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
			case "tools/list":
				res = `{"tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
			case "tools/call":
				res = l.result
			default:
				continue
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, res)
			w.Flush()
		}
	}()
	return p, nil
}

// BenchmarkGuardShare measures what the result guard adds to relaying one
// tools/call result through the gate (issue #5: aim under 10%). One gate
// relays the same result b.N times with the guard on and b.N times with it
// off, alternating call by call so that drift on a busy machine hits both
// alike, and reports the difference as a share of the relay without guard.
//
//	go test -run '^$' -bench GuardShare -benchtime 500x ./proxy
func BenchmarkGuardShare(b *testing.B) {
	text1K := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1000]
	text1M := strings.Repeat(text1K+"\n", 1048)
	for _, c := range []struct{ name, text string }{{"1KB", text1K}, {"1MB", text1M}} {
		quoted, _ := json.Marshal(c.text)
		result := `{"content":[{"type":"text","text":` + string(quoted) + `}]}`
		b.Run(c.name, func(b *testing.B) {
			on, off := relayLoop(b, result)
			b.ReportMetric(float64(off.Microseconds()), "relay-µs/op")
			b.ReportMetric(float64((on - off).Microseconds()), "guard-µs/op")
			b.ReportMetric(100*float64(on-off)/float64(off), "%-added-by-guard")
		})
	}
}

// relayLoop sends 2*b.N tools/call requests through a Gate over pipes,
// alternating the guard on and off, and returns the mean time per call of
// each.
func relayLoop(b *testing.B, result string) (on, off time.Duration) {
	g, err := New(Options{
		Servers:  []upstream.Config{{Name: "up", Type: upstream.TypeStdio, Command: "in-memory"}},
		Launcher: &rawLauncher{result: result},
		Policy:   static(b, allowAll),
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	hostR, gateW := io.Pipe()
	gateR, hostW := io.Pipe()
	go g.Serve(context.Background(), gateR, gateW)
	defer hostW.Close()
	rd := bufio.NewReaderSize(hostR, 1<<20)
	roundTrip := func(line string) {
		if _, err := io.WriteString(hostW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := rd.ReadSlice('\n')
		head := string(resp[:min(len(resp), 200)])
		for err == bufio.ErrBufferFull {
			_, err = rd.ReadSlice('\n')
		}
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(head, `"error"`) || strings.Contains(head, `isError`) {
			b.Fatalf("unexpected response: %s", head)
		}
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{}}}`
	for range 10 {
		roundTrip(call)
	}
	b.SetBytes(int64(len(result)))
	b.ResetTimer()
	for range b.N {
		for _, guard := range []bool{true, false} {
			g.noGuard.Store(!guard)
			t0 := time.Now()
			roundTrip(call)
			if guard {
				on += time.Since(t0)
			} else {
				off += time.Since(t0)
			}
		}
	}
	return on / time.Duration(b.N), off / time.Duration(b.N)
}
