package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// rawHandlers is a server written byte by byte: what it sends is exactly
// what a test expects to see, with no SDK in between to normalise it.
type rawHandlers struct {
	init      string                                         // initialize result
	toolsList string                                         // tools/list result
	listError string                                         // tools/list error object, instead of the result
	calls     map[string]func(c *rawConn, id, params string) // tools/call by tool name
	onInit    func(c *rawConn)                               // after notifications/initialized
	// methods answers other requests by method (resources/list, ...).
	methods map[string]func(c *rawConn, id, params string)
}

// rawConn writes lines to stdout and routes responses to the server's own
// requests.
type rawConn struct {
	mu      sync.Mutex
	nextID  int
	waiting map[string]chan json.RawMessage
	ev      *eventLog
}

func (c *rawConn) line(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	os.Stdout.WriteString(s + "\n")
}

func (c *rawConn) result(id, result string) {
	c.line(`{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`)
}

func (c *rawConn) errorResp(id, errObj string) {
	c.line(`{"jsonrpc":"2.0","id":` + id + `,"error":` + errObj + `}`)
}

// request sends a request to the client and waits for the raw response.
func (c *rawConn) request(method, params string) json.RawMessage {
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprintf(`"srv-%d"`, c.nextID)
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	c.line(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	return <-ch
}

func runRaw(h rawHandlers, ev *eventLog) error {
	c := &rawConn{waiting: map[string]chan json.RawMessage{}, ev: ev}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.IndexByte(sc.Text(), '\r') >= 0 {
			// A lone CR (the Scanner takes a CR LF's): Python's text
			// reader and Java's and .NET's ReadLine end a line there.
			ev.add("a line held a CR")
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			ev.add("client sent bad JSON: %v", err)
			continue
		}
		id := string(m.ID)
		switch {
		case m.Method == "":
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch != nil {
				resp := m.Result
				if m.Error != nil {
					resp = json.RawMessage(`{"error":` + string(m.Error) + `}`)
				}
				ch <- resp
			}
		case m.Method == "initialize":
			c.result(id, h.init)
		case m.Method == "notifications/initialized":
			if h.onInit != nil {
				go h.onInit(c)
			}
		case m.Method == "notifications/cancelled":
			ev.add("cancelled %s", strings.TrimSpace(string(m.Params)))
		case strings.HasPrefix(m.Method, "notifications/"):
		case m.Method == "ping":
			c.result(id, `{}`)
		case m.Method == "tools/list" && h.listError != "":
			c.errorResp(id, h.listError)
		case m.Method == "tools/list":
			c.result(id, h.toolsList)
		case m.Method == "tools/call":
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(m.Params, &p)
			ev.add("call %s %s", p.Name, string(m.Params))
			if f, ok := h.calls[p.Name]; ok {
				go f(c, id, string(m.Params))
			} else {
				c.errorResp(id, `{"code":-32602,"message":"no such tool"}`)
			}
		case h.methods[m.Method] != nil:
			ev.add("%s %s", m.Method, string(m.Params))
			go h.methods[m.Method](c, id, string(m.Params))
		default:
			c.errorResp(id, `{"code":-32601,"message":"method not found"}`)
		}
	}
	return sc.Err()
}

const rawInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"testserver-raw","version":"1"}}`

// Fidelity: every value here is something a decode-and-re-encode proxy
// would change: a root anyOf with no type, vendor keys, unknown fields,
// 2^53+1, a number written 1.0e+2, an unknown content type, odd spacing.
const (
	FidelityTool   = `{"name":"weird","description":"schema without a type","inputSchema":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"integer","maximum":9007199254740993}}}],"x-vendor":{"keep":true, "n":9007199254740993},"$schema":"https://json-schema.org/draft/2020-12/schema"},"x-unknown-field":[1,2.50,"three"],"annotations":{"readOnlyHint":true,"x-extra":null}}`
	FidelityTool2  = `{"name":"fails","inputSchema":{"type":"object","additionalProperties":false}}`
	FidelityResult = `{"content":[{"type":"hologram","data":{"z":1},"x":9007199254740993},{"type":"text","text":"big: 9007199254740993 \u00e9\u2028"}],"structuredContent":{"n":9007199254740993,"f":1.0e+2},"isError":false,"_meta":{"x-trace":"abc"}}`
	FidelityError  = `{"code":-32602,"message":"bad arguments: a must be a string","data":{"field":"a","got":9007199254740993,"hint":["x",null]}}`
)

func fidelityHandlers() rawHandlers {
	return rawHandlers{
		init:      rawInit,
		toolsList: `{"tools":[` + FidelityTool + `,` + FidelityTool2 + `]}`,
		calls: map[string]func(*rawConn, string, string){
			"weird": func(c *rawConn, id, _ string) { c.result(id, FidelityResult) },
			"fails": func(c *rawConn, id, _ string) { c.errorResp(id, FidelityError) },
		},
	}
}

// Garbage: a server that breaks the protocol in the ways real ones do.
func garbageHandlers() rawHandlers {
	ok := func(text string) string { return `{"content":[{"type":"text","text":"` + text + `"}]}` }
	return rawHandlers{
		init: rawInit,
		toolsList: `{"tools":[` +
			`{"name":"noise","inputSchema":{"type":"object"}},` +
			`{"name":"broken","inputSchema":{"type":"object"}},` +
			`{"name":"twice","inputSchema":{"type":"object"}},` +
			`{"name":"huge","inputSchema":{"type":"object"}},` +
			`{"name":"silent","inputSchema":{"type":"object"}},` +
			`{"name":"notobject","inputSchema":{"type":"object"}},` +
			`{"name":"fine","inputSchema":{"type":"object"}}]}`,
		calls: map[string]func(*rawConn, string, string){
			// Log lines on stdout, a classic: they must not break the session.
			"noise": func(c *rawConn, id, _ string) {
				c.line("Server listening on stdio... this is not JSON")
				c.line(`{"jsonrpc":"2.0","method":`)
				c.line(`{"hello":"a JSON object that is not JSON-RPC"}`)
				c.result(id, ok("after the noise"))
			},
			// A response cut off in the middle: the call must fail, not hang.
			"broken": func(c *rawConn, id, _ string) {
				c.line(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"cut`)
			},
			// Two responses: the host must get exactly one.
			"twice": func(c *rawConn, id, _ string) {
				c.result(id, ok("first"))
				c.result(id, ok("second"))
			},
			// Larger than the gate's limit in the e2e tests (1 MiB).
			"huge": func(c *rawConn, id, _ string) {
				c.result(id, ok(strings.Repeat("y", 2<<20)))
			},
			"silent":    func(*rawConn, string, string) {},
			"notobject": func(c *rawConn, id, _ string) { c.result(id, `"just a string"`) },
			"fine":      func(c *rawConn, id, _ string) { c.result(id, ok("fine")) },
		},
	}
}

// hostileHandlers is filled in by the result guard's tests (hostile.go).
var hostileHandlers = func() rawHandlers {
	return rawHandlers{init: rawInit, toolsList: `{"tools":[]}`}
}
