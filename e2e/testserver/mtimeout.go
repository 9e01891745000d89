package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"sync"
)

// The "mtimeout" modes: servers whose calls outlive the gate's callTimeout,
// one of each protocol era, for the callTimeout tests of every host and
// upstream era (e2e/mtimeout_test.go). Each call records the gate's id for
// it, so a test can match the cancellation the server receives to the call
// it cancelled:
//
//	"started <tool> <tag> <id>"     the call reached the server
//	"answered <tool> <tag> <id> …"  the answer to its question came back
//	"cancelled <params>"            (older era) notifications/cancelled's params
//	"cancelled <id> <reason>"       (2026-07-28) the same, for that era
//
// Tools (arguments: {"tag": "..."}): echo answers at once ("echo <tag>");
// never never answers; askhang asks the client a question (older era: an
// elicitation/create request mid-call; 2026-07-28: an input-required
// result) and, once answered, never answers.

// mtimeoutTools is the tools/list both modes serve.
const mtimeoutTools = `[{"name":"echo","inputSchema":{"type":"object","properties":{"tag":{"type":"string"}}}},` +
	`{"name":"never","inputSchema":{"type":"object","properties":{"tag":{"type":"string"}}}},` +
	`{"name":"askhang","inputSchema":{"type":"object","properties":{"tag":{"type":"string"}}}}]`

const mtimeoutQuestion = `{"mode":"form","message":"Which environment?","requestedSchema":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}}`

func mtimeoutTag(params string) string {
	var p struct {
		Arguments struct {
			Tag string `json:"tag"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal([]byte(params), &p)
	return p.Arguments.Tag
}

// mtimeoutHandlers is the older-era (2025-11-25) mode, on runRaw, which
// records notifications/cancelled with its params.
func mtimeoutHandlers() rawHandlers {
	return rawHandlers{
		init:      rawInit,
		toolsList: `{"tools":` + mtimeoutTools + `}`,
		calls: map[string]func(*rawConn, string, string){
			"echo": func(c *rawConn, id, params string) {
				t, _ := json.Marshal("echo " + mtimeoutTag(params))
				c.result(id, `{"content":[{"type":"text","text":`+string(t)+`}]}`)
			},
			"never": func(c *rawConn, id, params string) {
				c.ev.add("started never %s %s", mtimeoutTag(params), id)
			},
			"askhang": func(c *rawConn, id, params string) {
				tag := mtimeoutTag(params)
				c.ev.add("started askhang %s %s", tag, id)
				ans := c.request("elicitation/create", mtimeoutQuestion)
				c.ev.add("answered askhang %s %s %s", tag, id, ans)
			},
		},
	}
}

// runMtimeoutModern is the 2026-07-28 mode: server/discover, no
// initialize, and every request's envelope ignored.
func runMtimeoutModern(ev *eventLog) error {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var mu sync.Mutex
	out := func(id json.RawMessage, member string) {
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + string(id) + `,` + member + "}\n")
	}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" {
			continue
		}
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			}
			_ = json.Unmarshal(m.Params, &p)
			ev.add("cancelled %s %s", p.RequestID, p.Reason)
			continue
		}
		if len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "server/discover":
			out(m.ID, `"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mtimeout-modern","version":"1"}}}`)
		case "tools/list":
			out(m.ID, `"result":{"resultType":"complete","tools":`+mtimeoutTools+`,"ttlMs":0,"cacheScope":"private"}`)
		case "tools/call":
			var p struct {
				Name           string          `json:"name"`
				InputResponses json.RawMessage `json:"inputResponses"`
			}
			_ = json.Unmarshal(m.Params, &p)
			tag := mtimeoutTag(string(m.Params))
			id := strings.TrimSpace(string(m.ID))
			switch {
			case p.Name == "echo":
				t, _ := json.Marshal("echo " + tag)
				out(m.ID, `"result":{"resultType":"complete","content":[{"type":"text","text":`+string(t)+`}]}`)
			case p.Name == "never":
				ev.add("started never %s %s", tag, id)
			case p.Name == "askhang" && p.InputResponses == nil:
				ev.add("started askhang %s %s", tag, id)
				out(m.ID, `"result":{"resultType":"input_required","inputRequests":{"env":{"method":"elicitation/create","params":`+mtimeoutQuestion+`}},"requestState":"mtimeout-state"}`)
			case p.Name == "askhang":
				ev.add("answered askhang %s %s %s", tag, id, p.InputResponses)
			default:
				out(m.ID, `"error":{"code":-32602,"message":"no such tool"}`)
			}
		default:
			out(m.ID, `"error":{"code":-32601,"message":"method not found"}`)
		}
	}
	return sc.Err()
}
