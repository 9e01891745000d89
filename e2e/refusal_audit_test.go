package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// refusalRecords reads the gate's audit log and returns its refusal
// records, and whether any line holds needle.
func refusalRecords(t *testing.T, g *gate, needle string) ([]map[string]any, bool) {
	t.Helper()
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"event":"refusal"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out, strings.Contains(string(data), needle)
}

// wantRefusals fails unless the refusal records are exactly want, as
// method and kind, in order.
func wantRefusals(t *testing.T, got []map[string]any, want [][2]string) {
	t.Helper()
	var g, w []string
	for _, r := range got {
		g = append(g, fmt.Sprintf("%v %v", r["method"], r["kind"]))
		if r["reason"] == "" || r["user"] == "" {
			t.Errorf("a refusal record without its reason or user: %v", r)
		}
		if r["session"] == "" && r["kind"] != "malformed" && r["kind"] != "no_session" {
			t.Errorf("a session's refusal record without its session: %v", r)
		}
	}
	for _, r := range want {
		w = append(w, r[0]+" "+r[1])
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("refusal records:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// A host's requests that the gate refuses before its policy decides them
// are in the audit log, one refusal record each, with the method, the
// class and the reason; before, only stderr's log said anything of them,
// and of most nothing at all. Through the real binary over stdio, each
// still answered with its JSON-RPC error; an allowed call writes none.
func TestRefusedRequestsAudited(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	h := startRaw(t, g)
	// Before initialize.
	if resp := h.send("1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"x"}}}`); !strings.Contains(resp, `"code":-32600`) {
		t.Fatalf("a call before initialize: %s", resp)
	}
	h.initialize()
	if resp := h.send("2", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(resp, "honest__echo") {
		t.Fatalf("tools/list: %s", resp)
	}
	for i, c := range []struct{ line, code string }{
		{`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"x","text":"hunter2"}}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"honest__nosuch","arguments":{}}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"honest__echo","arguments":["hunter2"]}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"honest__nosuch"}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{}}`, "-32602"},
		{`{"jsonrpc":"2.0","id":%d,"method":"completion/complete","params":{"ref":{"type":"ref/hunter2"},"argument":{"name":"a","value":""}}}`, "-32602"},
		{`{"jsonrpc":"1.0","id":%d,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"hunter2"}}}`, "-32600"},
	} {
		id := fmt.Sprint(10 + i)
		line := fmt.Sprintf(c.line, 10+i)
		if resp := h.send(id, line); !strings.Contains(resp, `"code":`+c.code) {
			t.Errorf("%s: got %s, want a %s error", line, resp, c.code)
		}
	}
	// An allowed call: its decision, no refusal.
	if resp := h.send("30", `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"ok"}}}`); !strings.Contains(resp, `"result"`) {
		t.Fatalf("an allowed call: %s", resp)
	}
	got, leaked := refusalRecords(t, g, "hunter2")
	wantRefusals(t, got, [][2]string{
		{"tools/call", "not_initialized"},
		{"tools/call", "ambiguous_params"},
		{"tools/call", "unknown_name"},
		{"tools/call", "invalid_params"},
		{"prompts/get", "unknown_name"},
		{"resources/read", "invalid_params"},
		{"completion/complete", "invalid_params"},
		{"tools/call", "malformed"},
	})
	if leaked {
		t.Error("an argument value the host sent reached the audit log")
	}
}

// The same through the HTTP front end: a session's refused requests are
// its refusal records, with its session id, and a body refused before it
// reached a session is a refusal record of its user.
func TestHTTPRefusedRequestsAudited(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := &rawSession{t: t, url: url}
	post := func(body string) string {
		t.Helper()
		resp := r.send(ctx, "POST", body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if r.sid == "" {
			r.sid = resp.Header.Get("Mcp-Session-Id")
		}
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if b := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(b, "honest__echo") {
		t.Fatalf("tools/list: %s", b)
	}
	if b := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"x","TEXT":"hunter2"}}}`); !strings.Contains(b, `-32602`) {
		t.Errorf("ambiguous keys: %s", b)
	}
	if b := post(`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":""}}`); !strings.Contains(b, `-32602`) {
		t.Errorf("subscribe with no uri: %s", b)
	}
	// A body that is not a message is refused before any session: on
	// record all the same, for the user who sent it.
	if b := post(`{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"hunter2"}}}`); !strings.Contains(b, `-32600`) {
		t.Errorf("a body with the wrong jsonrpc: %s", b)
	}
	// Requests that reach no session: a session id nobody issued (what
	// guessing another user's looks like), and none at all. A notification
	// to an unknown session, which is not a request, leaves no record.
	for _, sid := range []string{"00112233445566778899aabbccddeeff", ""} {
		other := &rawSession{t: t, url: url, sid: sid}
		resp := other.send(ctx, "POST", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"honest__echo","arguments":{"text":"hunter2"}}}`)
		resp.Body.Close()
		if want := map[string]int{"": 400}[sid]; (want != 0 && resp.StatusCode != want) || (want == 0 && resp.StatusCode != 404) {
			t.Errorf("a call with session id %q: status %d", sid, resp.StatusCode)
		}
	}
	resp := (&rawSession{t: t, url: url, sid: "00112233445566778899aabbccddeeff"}).send(ctx, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	got, leaked := refusalRecords(t, g, "hunter2")
	wantRefusals(t, got, [][2]string{
		{"tools/call", "ambiguous_params"},
		{"resources/subscribe", "invalid_params"},
		{"tools/call", "malformed"},
		{"tools/call", "no_session"},
		{"tools/call", "no_session"},
	})
	if leaked {
		t.Error("an argument value the host sent reached the audit log")
	}
	// Each refusal is counted by its kind where its record is made, the
	// session's and the front end's alike.
	mresp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	body, _ := io.ReadAll(mresp.Body)
	for _, want := range []string{
		`mcp_gate_refusals_total{kind="ambiguous_params"} 1`,
		`mcp_gate_refusals_total{kind="invalid_params"} 1`,
		`mcp_gate_refusals_total{kind="malformed"} 1`,
		`mcp_gate_refusals_total{kind="no_session"} 2`,
		`mcp_gate_refusals_total{kind="unknown_name"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A completion of a resource template is decided as the URI its values
// make, and that decision's record names the template: the URI is the
// model's argument text, which the audit never carries.
func TestCompletionAuditNamesTemplate(t *testing.T) {
	t.Parallel()
	pol := writePolicy(t, "version: 1\nfallback: deny\nallow: [\"mcp:**\", \"resource:**\"]\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol)
	h := startRaw(t, g)
	h.initialize()
	h.send("2", `{"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}`)
	h.send("3", `{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://item/{id}"},"argument":{"name":"id","value":"hunter2"}}}`)
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"event":"decision"`) && strings.Contains(line, `"kind":"resource"`) {
			n++
			if !strings.Contains(line, `"tool":"test://item/{id}"`) {
				t.Errorf("a completion's decision does not name the template: %s", line)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d resource decisions, want the template's and its completed URI's:\n%s", n, data)
	}
	if strings.Contains(string(data), "hunter2") {
		t.Errorf("the completion's value reached the audit log:\n%s", data)
	}
}

// A 2026-07-28 request over HTTP that the front end refuses for its
// envelope or the headers mirroring it never reaches a session: it is on
// record all the same, as the same request over stdio is (a session's
// invalid_envelope), for the user who sent it. Before, the front end
// answered 400 and wrote nothing: a tools/call whose Mcp-Name named
// another tool (smuggling) left no audit line.
func TestHTTPModernEnvelopeRefusalsAudited(t *testing.T) {
	t.Parallel()
	g := gateCommand(t, map[string]server{"honest": testserver("honest")})
	url := g.serveHTTP(t)
	c := &modernHTTP{t: t, url: url, caps: `{}`}
	call := func(hdr map[string]string, params string) {
		t.Helper()
		r, b := post(t, url, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`+params+`}}`)
		if r.StatusCode != 400 {
			t.Errorf("status %d %s, want 400", r.StatusCode, b)
		}
	}
	// Headers that disagree with the body.
	call(modernHeaders("tools/call", "honest__blob"), echoCall("hunter2")+","+c.envelope())
	// An envelope without the client's capabilities.
	call(modernHeaders("tools/call", "honest__echo"), echoCall("hunter2")+`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)
	// The era's header on a body without the envelope.
	call(modernHeaders("tools/call", "honest__echo"), echoCall("hunter2"))
	// A notification of the era is accepted and dropped: no record.
	if r, b := post(t, url, modernHeaders("notifications/cancelled", ""), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,`+c.envelope()+`}}`); r.StatusCode >= 300 {
		t.Errorf("a notification: %d %s", r.StatusCode, b)
	}
	got, leaked := refusalRecords(t, g, "hunter2")
	var kinds []string
	for _, r := range got {
		kinds = append(kinds, fmt.Sprintf("%v %v", r["method"], r["kind"]))
		if r["reason"] == "" || r["user"] == "" || r["user"] == nil {
			t.Errorf("a refusal record without its reason or user: %v", r)
		}
	}
	want := "tools/call invalid_envelope\ntools/call invalid_envelope\ntools/call invalid_envelope"
	if strings.Join(kinds, "\n") != want {
		t.Errorf("refusal records:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), want)
	}
	if leaked {
		t.Error("an argument value the host sent reached the audit log")
	}
}
