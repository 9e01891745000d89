package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name, line string
		want       Message
		kind       string // call, notification or response
	}{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}`,
			Message{ID: raw(`1`), Method: "tools/list", Params: raw(`{"cursor":"c"}`)}, "call"},
		{"call without params", `{"jsonrpc":"2.0","id":"a","method":"ping"}`,
			Message{ID: raw(`"a"`), Method: "ping"}, "call"},
		{"array params", `{"jsonrpc":"2.0","id":-3,"method":"m","params":[1, 2]}`,
			Message{ID: raw(`-3`), Method: "m", Params: raw(`[1, 2]`)}, "call"},
		{"big id", `{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`,
			Message{ID: raw(`9007199254740993`), Method: "m"}, "call"},
		{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools\/c\u0061ll"}`,
			Message{ID: raw(`1`), Method: "tools/call"}, "call"},
		{"members in any order, spaced", ` { "params" : {} , "method" : "m" , "id" : 2 , "jsonrpc" : "2.0" } `,
			Message{ID: raw(`2`), Method: "m", Params: raw(`{}`)}, "call"},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":1,"method":"m","extra":{"x":1}}`,
			Message{ID: raw(`1`), Method: "m"}, "call"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			Message{Method: "notifications/initialized"}, "notification"},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
			Message{ID: raw(`1`), Result: raw(`{"content":[]}`)}, "response"},
		{"null result", `{"jsonrpc":"2.0","id":1,"result":null}`,
			Message{ID: raw(`1`), Result: raw(`null`)}, "response"},
		{"result first", `{"result":"r","jsonrpc":"2.0","id":"x"}`,
			Message{ID: raw(`"x"`), Result: raw(`"r"`)}, "response"},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data": {"a" : 1}}}`,
			Message{ID: raw(`1`), Error: &Error{Code: -32602, Message: "bad", Data: raw(`{"a" : 1}`)}}, "response"},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
			Message{ID: raw(`null`), Error: &Error{Code: -32700, Message: "parse"}}, "response"},
		{"duplicate keys: the last wins", `{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`,
			Message{ID: raw(`2`), Method: "b"}, "call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.line))
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.line, err)
			}
			if !equalMessages(m, &tt.want) {
				t.Errorf("Decode(%s) =\n %s\nwant\n %s", tt.line, show(m), show(&tt.want))
			}
			kind := map[bool]string{true: "call"}[m.IsCall()] + map[bool]string{true: "notification"}[m.IsNotification()] + map[bool]string{true: "response"}[m.IsResponse()]
			if kind != tt.kind {
				t.Errorf("Decode(%s) is a %q, want a %q", tt.line, kind, tt.kind)
			}
		})
	}
}

func TestDecodeInvalid(t *testing.T) {
	tests := []struct {
		name, line string
		code       int64
		id         string // salvaged id, "" for none
		reason     string
	}{
		{"not JSON", `hello`, CodeParseError, "", "not valid JSON"},
		{"empty", ``, CodeParseError, "", "not valid JSON"},
		{"two values", `{} {}`, CodeParseError, "", "not valid JSON"},
		{"cut, numeric id salvaged", `{"jsonrpc":"2.0","id":12,"method":"x","params":{`, CodeParseError, "12", "not valid JSON"},
		{"cut, string id salvaged", `{"jsonrpc":"2.0","id" : "a-1","result":{"x":"`, CodeParseError, `"a-1"`, "not valid JSON"},
		{"cut, negative id salvaged", `{"id":-4,"result":[`, CodeParseError, `-4`, "not valid JSON"},
		{"cut, id not salvageable", `{"jsonrpc":"2.0","id":{`, CodeParseError, "", "not valid JSON"},
		{"cut, id not JSON", `{"jsonrpc":"2.0","id":007,"method":"x"`, CodeParseError, "", "not valid JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, CodeInvalidRequest, "", "batches are not supported"},
		{"empty batch", `[]`, CodeInvalidRequest, "", "batches are not supported"},
		{"string", `"x"`, CodeInvalidRequest, "", "must be an object"},
		{"number", `12`, CodeInvalidRequest, "", "must be an object"},
		{"null", `null`, CodeInvalidRequest, "", "must be an object"},
		{"no version", `{"id":1,"method":"x"}`, CodeInvalidRequest, "1", `"jsonrpc" must be "2.0", found nothing`},
		{"old version", `{"jsonrpc":"1.0","id":1,"method":"x"}`, CodeInvalidRequest, "1", `found a string of 5 bytes`},
		{"numeric version", `{"jsonrpc":2.0,"id":1,"method":"x"}`, CodeInvalidRequest, "1", `found a number of 3 bytes`},
		{"escaped version", `{"jsonrpc":"2\u002e0","id":1,"method":"x"}`, CodeInvalidRequest, "1", `must be "2.0"`},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"x"}`, CodeInvalidRequest, "", `"id" must be a string or a number, found a boolean`},
		{"id object", `{"jsonrpc":"2.0","id":{},"result":1}`, CodeInvalidRequest, "", `"id" must be a string or a number`},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"x"}`, CodeInvalidRequest, "", `"id" must be a string or a number`},
		{"null request id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`, CodeInvalidRequest, "", "request id must not be null"},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":1}`, CodeInvalidRequest, "1", `"method" must be a string, found a number of 1 bytes`},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, CodeInvalidRequest, "1", `"method" must be a string`},
		{"method empty", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, "1", `"method" must be a non-empty string`},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`, CodeInvalidRequest, "1", "both a method and a result or error"},
		{"method and error", `{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"x"}}`, CodeInvalidRequest, "1", "both a method and a result or error"},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"m","params":"p"}`, CodeInvalidRequest, "1", `"params" must be an object or array, found a string of 3 bytes`},
		{"params null", `{"jsonrpc":"2.0","method":"m","params":null}`, CodeInvalidRequest, "", `"params" must be an object or array, found null`},
		{"params long", `{"jsonrpc":"2.0","id":1,"method":"m","params":"` + strings.Repeat("p", 100) + `"}`, CodeInvalidRequest, "1", `found a string of 102 bytes`},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, "", "a response must have an id"},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, "1", "exactly one of result and error"},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}`, CodeInvalidRequest, "1", "exactly one of result and error"},
		{"error string", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, CodeInvalidRequest, "1", `"error" must be an object`},
		{"error null", `{"jsonrpc":"2.0","id":1,"error":null}`, CodeInvalidRequest, "1", `"error" must be an object`},
		{"error code string", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`, CodeInvalidRequest, "1", `"error" must be an object`},
		{"error code missing", `{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, CodeInvalidRequest, "1", `"error" must be an object`},
		{"error message number", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":5}}`, CodeInvalidRequest, "1", `"error" must be an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.line))
			var de *decodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%s) = %v, %v; want a decode error", tt.line, show(m), err)
			}
			if de.code != tt.code || string(de.id) != tt.id || !strings.Contains(de.reason, tt.reason) {
				t.Errorf("Decode(%s) = code %d, id %q, %q; want code %d, id %q, reason containing %q",
					tt.line, de.code, de.id, de.reason, tt.code, tt.id, tt.reason)
			}
			if err.Error() != de.reason {
				t.Errorf("Error() = %q, want the reason %q", err.Error(), de.reason)
			}
		})
	}
}

func TestSalvageID(t *testing.T) {
	big := strings.Repeat("x", 600)
	for _, c := range []struct {
		name, head, tail, want string
	}{
		{"go-sdk order", `{"jsonrpc":"2.0","id":5,"result":{"content":[`, "", "5"},
		{"string id", `{"jsonrpc":"2.0","id":"req-1","result":`, "", `"req-1"`},
		// The TypeScript SDK writes the id last: only the tail has it.
		{"id last", `{"result":{"content":[{"type":"text","text":"` + big, `xxxx"}]},"jsonrpc":"2.0","id":7}`, "7"},
		// A nested "id" must never be taken for the message's.
		{"nested id in the head", `{"result":{"structuredContent":{"id":99},"content":"` + big, `xxx"},"jsonrpc":"2.0"}`, ""},
		{"nested id in the tail", `{"jsonrpc":"2.0","result":{"items":[`, `{"id":3},{"id":4}]}}`, ""},
		{"beyond the head window, no tail", `{"jsonrpc":"2.0","result":"` + big + `","id":5`, "", ""},
		{"unterminated string", `{"id":"unterminated`, "", ""},
		{"no colon", `{"id" 5}`, "", ""},
		// What is salvaged is written back in an error response: it must be JSON.
		{"leading zeros", `{"id":000,`, "", ""},
		{"not a number", `{"id":1-2,`, "", ""},
		{"lone minus", `{"id":-,`, "", ""},
		{"escaped quote", `{"id":"a\"b",`, "", `"a\"b"`},
		{"bad escape", `{"id":"a\x",`, "", ""},
		{"empty", `{"id":}`, "", ""},
		{"null", `{"id":null,"error":`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tail []byte
			if c.tail != "" {
				tail = []byte(c.tail)
			}
			if got := salvageID([]byte(c.head), tail); string(got) != c.want {
				t.Errorf("salvageID = %q, want %q", got, c.want)
			}
		})
	}
}

func TestLooksLikeRequest(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{`:              true,
		`{"jsonrpc":"2.0","id":1,"result":{"text":"\"method\": 1`:      false,
		`{"result":{"method":"x"},"id":1`:                              false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"method"`: false,
		`{"jsonrpc":"2.0","id":1,"error":{"data":{"method":"x"}`:       false,
		`garbage`: false,
		`{"method":"notifications/progress","params":{"result":"x"`: true,
	} {
		if got := looksLikeRequest([]byte(line)); got != want {
			t.Errorf("looksLikeRequest(%s) = %v, want %v", line, got, want)
		}
	}
}

func TestAppendMessage(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"call", Message{ID: raw(`7`), Method: "tools/call", Params: raw(`{"a" : 1}`)}, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a" : 1}}`},
		{"notification", Message{Method: "notifications/initialized"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"method needing escapes", Message{Method: "a\"<b>"}, `{"jsonrpc":"2.0","method":"a\"<b>"}`},
		{"result", Message{ID: raw(`"x"`), Result: raw(`[1,  2]`)}, `{"jsonrpc":"2.0","id":"x","result":[1,  2]}`},
		{"error without id", Message{Error: &Error{Code: -32700, Message: "not valid JSON"}}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not valid JSON"}}`},
		{"error with data", Message{ID: raw(`1`), Error: &Error{Code: 5, Message: "m", Data: raw(`{"k" : "<&>"}`)}}, `{"jsonrpc":"2.0","id":1,"error":{"code":5,"message":"m","data":{"k" : "<&>"}}}`},
	}
	for _, tt := range tests {
		got, err := appendMessage([]byte("prefix"), &tt.m)
		if err != nil || string(got) != "prefix"+tt.want {
			t.Errorf("%s: appendMessage = %s, %v; want prefix%s", tt.name, got, err, tt.want)
		}
	}
	if _, err := appendMessage(nil, &Message{ID: raw(`1`)}); err == nil {
		t.Error("appendMessage of a response without result or error: no error")
	}
	if _, err := appendMessage(nil, &Message{ID: raw(`1`), Error: &Error{Code: 1, Message: "m", Data: raw(`{bad`)}}); err == nil {
		t.Error("appendMessage with invalid error data: no error")
	}
}

func TestIDKey(t *testing.T) {
	same := [][2]string{{`7`, `7.0`}, {`7`, `7e0`}, {`70`, `7E1`}, {`-1`, `-1.00`}}
	for _, p := range same {
		if idKey(raw(p[0])) != idKey(raw(p[1])) {
			t.Errorf("idKey(%s) != idKey(%s); want the same request", p[0], p[1])
		}
	}
	distinct := [][2]string{{`1`, `"1"`}, {`9007199254740992`, `9007199254740993`}, {`1.5`, `1`}, {`1e300`, `1e301`}, {`"a"`, `"b"`}}
	for _, p := range distinct {
		if idKey(raw(p[0])) == idKey(raw(p[1])) {
			t.Errorf("idKey(%s) == idKey(%s); want different requests", p[0], p[1])
		}
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// is written back by appendMessage in a form that decodes to the same
// message.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5}}`,
		`{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"a\"b"}]}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32602,"message":"m","data": [1, {"x":null}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000.5,"x":"QQQQ"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`,
		`{"result":1,"jsonrpc":"2.0","id":-1.5e3}`,
		`{"jsonrpc":"2.0","id":1,"method":"m\u0000\ud800"}`,
		`[{"jsonrpc":"2.0"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{`,
		`garbage`,
		`{"jsonrpc":"QQQQ","id":{"QQQQ":1},"method":"QQQQ","params":"QQQQ"}`,
		`{"jsonrpc":"2.0","id":1,"error":"QQQQ"}`,
		`{"jsonrpc":"2.0","id":[QQQQ],"result":1}`,
		`QQQQ`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"}\r\n}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,\r2]}}\r",
		"\n{\"jsonrpc\":\"2.0\",\"id\"\r:\r1,\"error\":{\"code\":1,\"data\":\n{}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			var de *decodeError
			if !errors.As(err, &de) || de.reason == "" {
				t.Fatalf("Decode(%q) = %v; want a *decodeError with a reason", line, err)
			}
			// A reason reaches logs: it never quotes the line (issue 8).
			if bytes.Contains(line, []byte("QQQQ")) && strings.Contains(de.reason, "QQQQ") {
				t.Fatalf("Decode(%q): the reason quotes the input: %s", line, de.reason)
			}
			if de.id != nil && !json.Valid(de.id) {
				t.Fatalf("Decode(%q) salvaged id %q, which is not JSON", line, de.id)
			}
			return
		}
		out, err := appendMessage(nil, m)
		if err != nil {
			t.Fatalf("appendMessage(Decode(%q)): %v", line, err)
		}
		if bytes.ContainsAny(out, "\r\n") {
			t.Fatalf("appendMessage wrote a line break inside a message: %q", out)
		}
		back, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(appendMessage(Decode(%q))) = %v; wrote %q", line, err, out)
		}
		if !equalMessages(m, back) {
			t.Fatalf("round trip of %q changed the message:\n %s\n %s", line, show(m), show(back))
		}
	})
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// equalMessages compares what a Message carries on the wire. A response's
// params are not part of it: appendMessage does not write them.
func equalMessages(a, b *Message) bool {
	if a == nil || b == nil {
		return a == b
	}
	if (a.ID == nil) != (b.ID == nil) || !bytes.Equal(a.ID, b.ID) || a.Method != b.Method || !bytes.Equal(a.Result, b.Result) || (a.Result == nil) != (b.Result == nil) {
		return false
	}
	if a.Method != "" && (!bytes.Equal(a.Params, b.Params) || (a.Params == nil) != (b.Params == nil)) {
		return false
	}
	if (a.Error == nil) != (b.Error == nil) {
		return false
	}
	return a.Error == nil || a.Error.Code == b.Error.Code && a.Error.Message == b.Error.Message && bytes.Equal(a.Error.Data, b.Error.Data)
}

func show(m *Message) string {
	if m == nil {
		return "<nil>"
	}
	s := "id=" + string(m.ID) + " method=" + m.Method + " params=" + string(m.Params) + " result=" + string(m.Result)
	if m.Error != nil {
		s += " error=" + string(mustJSON(m.Error))
	}
	return s
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func BenchmarkDecode(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"github__create_issue","arguments":{"title":"x","body":"` + strings.Repeat("y", 1000) + `"}}}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	m := &Message{ID: raw(`17`), Result: raw(`{"content":[{"type":"text","text":"` + strings.Repeat("y", 1000) + `"}]}`)}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendMessage(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

// A message is read from framings that allow raw line breaks inside it (an
// HTTP body, an SSE event's joined data lines, a stdio line's lone CR) and
// written to peers whose readers end a message at each: the TypeScript
// SDK's at LF, Python's text reader and Java's and .NET's ReadLine at a
// lone CR too. Relayed as it came, the second line below was a request of
// its own on the next hop, one the gate never decided (or, from an
// upstream, an answer or a request the host took past the guard).
func TestDecodeLeavesNoLineBreakToRelay(t *testing.T) {
	smuggled := `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"write_file","arguments":{}}}`
	for name, line := range map[string]string{
		"params LF":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","x":` + "\n" + smuggled + "\n}}",
		"params CR":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","x":` + "\r" + smuggled + "\r}}",
		"params CRLF":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","x":` + "\r\n" + smuggled + "\r\n}}",
		"result LF":       `{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":` + "\n" + smuggled + "\n}}",
		"result CR":       `{"jsonrpc":"2.0","id":1,"result":{"content":[],"x":` + "\r" + smuggled + "\r}}",
		"error data":      `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m","data":` + "\n" + smuggled + "\n}}",
		"notification":    `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + "\r" + smuggled + "\r}}",
		"pretty-printed":  "{\r\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 1,\r\n  \"result\": {\r\n    \"content\": []\r\n  }\r\n}\r\n",
		"around the id":   "{\"jsonrpc\":\"2.0\",\"id\":\n7\n,\"result\":{}}",
		"strings escaped": `{"jsonrpc":"2.0","id":1,"result":{"text":"a\nb\r\n\u000a"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			m, err := Decode([]byte(line))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			for _, f := range [][]byte{m.ID, m.Params, m.Result} {
				if bytes.ContainsAny(f, "\r\n") {
					t.Errorf("a raw field holds a line break: %q", f)
				}
			}
			if m.Error != nil && bytes.ContainsAny(m.Error.Raw, "\r\n") {
				t.Errorf("the error holds a line break: %q", m.Error.Raw)
			}
			out, err := appendMessage(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(out, "\r\n") {
				t.Fatalf("the relayed message holds a line break, so a line-framed peer reads it as several:\n%q", out)
			}
			// The same value: only whitespace changed.
			var want, got any
			if err := json.Unmarshal([]byte(line), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			delete(want.(map[string]any), "jsonrpc")
			delete(got.(map[string]any), "jsonrpc")
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Errorf("the value changed:\n %v\n %v", want, got)
			}
		})
	}
}

// The same through a Stream: a host's stdio line may hold a lone CR, which
// the Stream's framing (LF) keeps inside the line.
func TestStreamRelaysNoLoneCR(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","x":` + "\r" +
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"write_file"}}` + "\r}}\n"
	s := NewStream(strings.NewReader(in), io.Discard, nil, Limits{})
	defer s.Close()
	m, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(m.Params, '\r') >= 0 {
		t.Fatalf("params read from a stdio line keep a lone CR, which Python's, Java's and .NET's readers take for a line's end: %q", m.Params)
	}
}

// A message the gate did not read with Decode (a catalog cache file's
// entries, a builder of its own) may carry raw line breaks in its raw
// fields: every writer (a Stream's line, Encode for HTTP, EncodeMessage for
// a remote upstream) writes it as one line, and a large payload sent from
// the message's own bytes is copied, not rewritten where it lies (it may be
// shared: a cached catalog entry serves every session).
func TestWriteLeavesNoLineBreak(t *testing.T) {
	smuggled := `{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{}}`
	big := `{"pad":"` + strings.Repeat("x", largePayload) + `","x":` + "\r\n" + smuggled + "\n}"
	for name, m := range map[string]*Message{
		"params":       {ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage("{\"x\":\n" + smuggled + "\n}")},
		"result":       {ID: json.RawMessage(`1`), Result: json.RawMessage("{\"x\":\r" + smuggled + "\r}")},
		"error data":   {ID: json.RawMessage(`1`), Error: &Error{Code: 1, Message: "m", Data: json.RawMessage("{\"x\":\n" + smuggled + "\n}")}},
		"error raw":    {ID: json.RawMessage(`1`), Error: &Error{Raw: json.RawMessage("{\"code\":1,\"message\":\"m\",\"data\":\n" + smuggled + "\n}")}},
		"large result": {ID: json.RawMessage(`1`), Result: json.RawMessage(big)},
		"large params": {ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(big)},
	} {
		t.Run(name, func(t *testing.T) {
			before := fmt.Sprintf("%q %q %v", m.Params, m.Result, m.Error)
			for how, enc := range map[string]func() ([]byte, error){
				"Encode":        func() ([]byte, error) { return Encode(m) },
				"EncodeMessage": func() ([]byte, error) { return EncodeMessage(m) },
				"Stream": func() ([]byte, error) {
					var out bytes.Buffer
					s := NewStream(strings.NewReader(""), &out, nil, Limits{})
					err := s.Write(context.Background(), m)
					if err == nil {
						err = s.Flush(context.Background())
					}
					s.Close()
					return bytes.TrimSuffix(out.Bytes(), []byte("\n")), err
				},
			} {
				out, err := enc()
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if bytes.ContainsAny(out, "\r\n") {
					t.Errorf("%s wrote a line break inside the message, which a line-framed peer reads as several: %.200q", how, out)
				}
				if !json.Valid(out) {
					t.Errorf("%s wrote invalid JSON: %.200q", how, out)
				}
			}
			if after := fmt.Sprintf("%q %q %v", m.Params, m.Result, m.Error); after != before {
				t.Errorf("writing changed the message's own bytes")
			}
		})
	}
}

// A 1 MB result decoded (validated, its line breaks rewritten) and written
// as a line from the message's own bytes (scanned for line breaks).
func BenchmarkDecodeLarge(b *testing.B) {
	orig := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"` + strings.Repeat("y", 1<<20) + `"}]}}`)
	line := make([]byte, len(orig))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		copy(line, orig)
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeLineLarge(b *testing.B) {
	m := &Message{ID: raw(`17`), Result: raw(`{"content":[{"type":"text","text":"` + strings.Repeat("y", 1<<20) + `"}]}`)}
	b.SetBytes(int64(len(m.Result)))
	for b.Loop() {
		if _, err := encodeLineInto(nil, m); err != nil {
			b.Fatal(err)
		}
	}
}
