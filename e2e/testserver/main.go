// Command testserver is an MCP server for mcp-gate's end-to-end tests and
// benchmarks. Its modes are the behaviours the gate must cope with:
//
//	honest    a well-behaved go-sdk server: echo, blob, slow (progress,
//	          cancellation), ask (elicitation), sample, roots, toggle
//	          (list_changed), crash, a prompt and resources
//	fidelity  a hand-written server whose schemas and results use every
//	          corner of JSON that a lossy proxy would change
//	garbage   writes non-JSON lines, malformed and duplicate responses
//	exit      writes to stderr and exits at once
//	hostile   tool results, elicitations and descriptions that try to
//	          forge consent or hide characters (the result guard's tests)
//	colons    tool names with colons and glob characters (policy globs)
//
// With --events FILE it appends one line per notable event (a cancelled
// call, say) so a test can see what reached the server.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	mode := flag.String("mode", "honest", "honest, fidelity, garbage, exit or hostile")
	events := flag.String("events", "", "append event lines to this file")
	flag.Parse()
	ev := newEventLog(*events)
	var err error
	switch *mode {
	case "honest":
		err = runHonest(ev)
	case "fidelity":
		err = runRaw(fidelityHandlers(), ev)
	case "garbage":
		err = runRaw(garbageHandlers(), ev)
	case "hostile":
		err = runRaw(hostileHandlers(), ev)
	case "colons":
		err = runRaw(colonHandlers(), ev)
	case "paths":
		err = runPaths(ev)
	case "dialogs":
		err = runRaw(dialogsHandlers(), ev)
	case "neutral":
		err = runRaw(neutralHandlers(), ev)
	case "resources":
		err = runResources(ev, flag.Args())
	case "secrets":
		err = runRaw(secretsHandlers(), ev)
	case "leaky":
		err = runRaw(leakyHandlers(), ev)
	case "guard2":
		err = runRaw(guard2Handlers(), ev)
	case "guardkeys":
		err = runRaw(guardKeysHandlers(), ev)
	case "lenient":
		err = runRaw(lenientHandlers(), ev)
	case "remote":
		err = runRemote(ev)
	case "life":
		err = runLife(ev, flag.Args())
	case "relayfid":
		err = runRaw(relayfidHandlers(), ev)
	case "bypass7":
		err = runRaw(bypass7Handlers(), ev)
	case "samplectx":
		err = runRaw(sampleContextHandlers(), ev)
	case "gatewords-instructions", "gatewords-listfail":
		err = runRaw(gateWordsHandlers(*mode == "gatewords-listfail"), ev)
	case "relayfid-old":
		err = runRaw(relayfidOldHandlers(), ev)
	case "stubborn":
		err = runStubborn(ev)
	case "auditcheck":
		err = runAuditCheck(flag.Args())
	case "auditburst":
		err = runAuditBurst(flag.Args())
	case "lazy":
		err = runLazy(ev, flag.Args())
	case "bypass-era":
		err = runRaw(bypassEraHandlers(), ev)
	case "park":
		err = runPark(ev)
	case "mfast-stray":
		err = runStray(ev)
	case "modern-only":
		err = runModernOnly(ev)
	case "mtimeout":
		err = runRaw(mtimeoutHandlers(), ev)
	case "mtimeout-modern":
		err = runMtimeoutModern(ev)
	case "preinit-silent", "preinit-exit":
		err = runPreinit(ev, (*mode)[len("preinit-"):])
	case "lbuf":
		err = runLbuf()
	case "exit":
		fmt.Fprintln(os.Stderr, "testserver: configuration error: missing API key (exiting on purpose)")
		os.Exit(3)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

type eventLog struct{ path string }

func newEventLog(path string) *eventLog { return &eventLog{path: path} }

func (e *eventLog) add(format string, args ...any) {
	if e.path == "" {
		return
	}
	f, err := os.OpenFile(e.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}
