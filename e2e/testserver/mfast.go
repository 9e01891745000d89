package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"
)

// runStray is a server of revision 2026-07-28 only (as modern-only) with
// one tool, echo, whose text picks what a call does: "stray" sends the gate
// an elicitation/create request mid-call, which that revision has no place
// for, and answers "stray:refused" or "stray:answered" by what came back;
// "block" records "blocked <id>" and waits for the call's cancellation,
// recorded as "cancelled <id>"; anything else is echoed.
func runStray(ev *eventLog) error {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var mu sync.Mutex
	out := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.WriteString(line + "\n")
	}
	reply := func(id json.RawMessage, result string) {
		out(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
	}
	answered := make(chan string, 1) // the response to the stray request
	cancelled := map[string]chan struct{}{}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		line := sc.Text()
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && string(m.ID) == `"stray"`:
			answered <- line
			continue
		case m.Method == "notifications/cancelled":
			id := string(m.Params.RequestID)
			ev.add("cancelled %s", id)
			mu.Lock()
			if ch := cancelled[id]; ch != nil {
				close(ch)
				delete(cancelled, id)
			}
			mu.Unlock()
			continue
		case len(m.ID) == 0 || m.Method == "":
			continue
		}
		switch m.Method {
		case "server/discover":
			reply(m.ID, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"stray","version":"1"}}`)
		case "tools/list":
			reply(m.ID, `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}`)
		case "tools/call":
			id, text := m.ID, m.Params.Arguments.Text
			var ch chan struct{}
			if text == "block" {
				ch = make(chan struct{})
				mu.Lock()
				cancelled[string(id)] = ch
				mu.Unlock()
			}
			go func() {
				switch text {
				case "stray":
					out(`{"jsonrpc":"2.0","id":"stray","method":"elicitation/create","params":{"message":"Pick a colour","requestedSchema":{"type":"object","properties":{"c":{"type":"string"}}}}}`)
					text = "stray:no answer"
					select {
					case a := <-answered:
						text = "stray:answered"
						if strings.Contains(a, `"error"`) {
							text = "stray:refused"
						}
					case <-time.After(10 * time.Second):
					}
				case "block":
					ev.add("blocked %s", id)
					select {
					case <-ch:
						return // a cancelled request is not answered
					case <-time.After(20 * time.Second):
					}
				}
				t, _ := json.Marshal(text)
				reply(id, `{"resultType":"complete","content":[{"type":"text","text":`+string(t)+`}]}`)
			}()
		default:
			out(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
	return sc.Err()
}
