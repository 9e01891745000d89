package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Copies of testserver/relayfid.go's constants: the test must fail if
// either side changes them.
var relayfidErrors = map[string]string{
	"err_escapes":   `{"code":-32000,"message":"a \"quoted\" \u00e9 \/ line\nbreak","data":{"n":9007199254740993}}`,
	"err_unknown":   `{"code":-32001,"message":"with extras","x-retry-after":5,"data":null}`,
	"err_nomessage": `{"code":-32002}`,
	"err_floatcode": `{"code":-32000.5,"message":"a code with a fraction"}`,
}

const (
	relayfidNotification       = "notifications/x-relayfid/custom"
	relayfidNotificationParams = `{"n":9007199254740993,"s":"\u00e9 ok","_meta":{"k":[1,2.50]}}`
	relayfidListMeta           = `{"x-vendor/generation":9007199254740993,"note":"\u00e9 1.50"}`
)

// errorMember is the "error" member of a response line, as written.
func errorMember(t *testing.T, line string) string {
	t.Helper()
	var m struct{ Error json.RawMessage }
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Error == nil {
		t.Fatalf("not an error response: %s", line)
	}
	return string(m.Error)
}

// Row 4: an upstream's errors reach the host byte for byte (escapes,
// members JSON-RPC does not name, no message, a code that is not an
// integer); a notification of no MCP method reaches the host with its
// params byte for byte; the host's cancellation reaches the upstream with
// its reason and extra members, only the request id being the gate's.
func TestRelayErrorsAndNotifications(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	directEvents, gateEvents := dir+"/direct", dir+"/gate"
	dcmd := exec.Command(testserverBin, "--mode", "relayfid", "--events", directEvents)
	direct := startRawCmd(t, dcmd, func() string { return "" })
	initWith(direct, `{}`)
	g := gateCommand(t, map[string]server{"fid": testserver("relayfid", "--events", gateEvents)})
	h := startRaw(t, g)
	initWith(h, `{}`)

	// The list-level _meta of tools/list, byte for byte.
	listMeta := func(h *rawHost) string {
		var m struct {
			Meta json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(rawResult(t, h.send("9", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)), &m)
		return string(m.Meta)
	}
	if d, g := listMeta(direct), listMeta(h); d != relayfidListMeta || g != d {
		t.Errorf("tools/list _meta through the gate: %s; directly %s", g, d)
	}

	for name, want := range relayfidErrors {
		d := errorMember(t, direct.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`))
		if d != want {
			t.Fatalf("%s directly: %s, want %s", name, d, want)
		}
		if got := errorMember(t, h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fid__`+name+`","arguments":{}}}`)); got != d {
			t.Errorf("%s through the gate:\n got: %s\nwant: %s", name, got, d)
		}
	}

	rawResult(t, direct.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify_custom","arguments":{}}}`))
	want := direct.waitNotification(relayfidNotification, "", 10e9)
	rawResult(t, h.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fid__notify_custom","arguments":{}}}`))
	got := h.waitNotification(relayfidNotification, "", 10e9)
	if p := notificationParams(t, got); p != relayfidNotificationParams || p != notificationParams(t, want) {
		t.Errorf("the unknown notification through the gate:\n got: %s\nwant: %s", got, want)
	}

	cancelled := func(h *rawHost, events, name string) string {
		h.send("", `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}`)
		waitFor(t, "the call to reach the server", 10e9, func() bool {
			b, _ := os.ReadFile(events)
			return strings.Contains(string(b), "call silent")
		})
		h.send("", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":30,"reason":"user gave up \u00e9","x-extra":{"a":[1,2.50]}}}`)
		var line string
		waitFor(t, "the cancellation to reach the server", 10e9, func() bool {
			b, _ := os.ReadFile(events)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "cancelled ") {
					line = strings.TrimPrefix(l, "cancelled ")
				}
			}
			return line != ""
		})
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("cancellation params %q: %v", line, err)
		}
		delete(m, "requestId")
		b, _ := json.Marshal(m)
		return string(b) + " " + line[strings.Index(line, `"reason"`):]
	}
	d := cancelled(direct, directEvents, "silent")
	if c := cancelled(h, gateEvents, "fid__silent"); c != d {
		t.Errorf("the cancellation through the gate:\n got: %s\nwant: %s", c, d)
	}
}
