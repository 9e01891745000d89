package main

import (
	"bufio"
	"encoding/json"
	"os"
)

// runPreinit is an older-era server that treats a request before
// initialize the way some real ones do: "silent" never answers it (the
// gate's server/discover probe can only time out), "exit" exits on it. It
// records every method it is sent ("method <name>"), so a test can see
// whether the gate probed it. After initialize it serves one tool, echo.
func runPreinit(ev *eventLog, how string) error {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	initialized := false
	out := func(s string) { os.Stdout.WriteString(s + "\n") }
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" {
			continue
		}
		ev.add("method %s", m.Method)
		id := string(m.ID)
		switch {
		case m.Method == "initialize":
			initialized = true
			out(`{"jsonrpc":"2.0","id":` + id + `,"result":` + rawInit + `}`)
		case len(m.ID) == 0: // a notification
		case !initialized:
			if how == "exit" {
				os.Exit(4)
			}
		case m.Method == "ping":
			out(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		case m.Method == "tools/list":
			out(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}}`)
		case m.Method == "tools/call":
			text, _ := json.Marshal("preinit:" + m.Params.Arguments.Text)
			out(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + string(text) + `}]}}`)
		default:
			out(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
	return sc.Err()
}
