package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// runLife is the "life" mode: a server for the gate's lifecycle tests
// (bounded memory, broken framing, timeouts, restarts). Its tools:
//
//	big      a result of --big-bytes bytes of text (1 MiB by default)
//	echo     a short result
//	never    never answers
//	endless  starts its answer and writes on forever without a newline
//	partial  writes the start of its answer and then nothing, ever
//
// --stderr-line N writes one stderr line of N bytes at start, and a short
// stderr line on every call after it (a gate that stopped draining stderr
// would have the server killed by SIGPIPE). --die-every N exits, without
// answering, on the Nth call the process receives.
func runLife(ev *eventLog, args []string) error {
	fs := flag.NewFlagSet("life", flag.ContinueOnError)
	bigBytes := fs.Int("big-bytes", 1<<20, "size of big's text")
	stderrLine := fs.Int("stderr-line", 0, "write one stderr line of this many bytes at start")
	dieEvery := fs.Int64("die-every", 0, "exit on the Nth call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stderrLine > 0 {
		os.Stderr.WriteString(strings.Repeat("e", *stderrLine) + "\n")
	}
	bigText := strings.Repeat("b", *bigBytes)
	var calls atomic.Int64
	wrap := func(f func(c *rawConn, id, params string)) func(*rawConn, string, string) {
		return func(c *rawConn, id, params string) {
			n := calls.Add(1)
			if *stderrLine > 0 {
				fmt.Fprintf(os.Stderr, "testserver: call %d\n", n)
			}
			if *dieEvery > 0 && n%*dieEvery == 0 {
				fmt.Fprintf(os.Stderr, "testserver: dying on call %d, on purpose\n", n)
				os.Exit(1)
			}
			f(c, id, params)
		}
	}
	text := func(s string) string { return `{"content":[{"type":"text","text":"` + s + `"}]}` }
	tool := func(name string) string { return `{"name":"` + name + `","inputSchema":{"type":"object"}}` }
	h := rawHandlers{
		init:      rawInit,
		toolsList: `{"tools":[` + strings.Join([]string{tool("big"), tool("echo"), tool("never"), tool("endless"), tool("partial")}, ",") + `]}`,
		calls: map[string]func(*rawConn, string, string){
			"big":   wrap(func(c *rawConn, id, _ string) { c.result(id, text(bigText)) }),
			"echo":  wrap(func(c *rawConn, id, _ string) { c.result(id, text("echo")) }),
			"never": wrap(func(*rawConn, string, string) {}),
			"endless": wrap(func(c *rawConn, id, _ string) {
				c.mu.Lock() // never released: nothing else is written after
				os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"`)
				chunk := strings.Repeat("x", 64<<10)
				for {
					if _, err := os.Stdout.WriteString(chunk); err != nil {
						os.Exit(1)
					}
				}
			}),
			"partial": wrap(func(c *rawConn, id, _ string) {
				c.mu.Lock() // never released: the line stays unfinished
				os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"te`)
				select {}
			}),
		},
	}
	return runRaw(h, ev)
}
