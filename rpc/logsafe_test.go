package rpc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

const canary = "CANARY7f3e9b"

// canaryLines are malformed messages that carry the canary in every place
// a decode error could quote: the whole line, the version, the id, the
// method, the params, an error object.
var canaryLines = []string{
	canary + " not JSON",
	`{"jsonrpc":"2.0","method":"` + canary,
	`{"jsonrpc":"` + canary + `","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":{"` + canary + `":1},"method":"x"}`,
	`{"jsonrpc":"2.0","id":[1,"` + canary + `"],"result":{}}`,
	`{"jsonrpc":"2.0","id":2,"method":{"` + canary + `":1}}`,
	`{"jsonrpc":"2.0","id":3,"method":"m","params":"` + canary + `"}`,
	`{"jsonrpc":"2.0","id":4,"error":"` + canary + `"}`,
	`{"jsonrpc":"2.0","id":5,"error":{"code":"` + canary + `"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"m","` + canary + `"}`,
	`["` + canary + `"]`,
	`"` + canary + `"`,
	`{"jsonrpc":"2.0","id":"` + canary + `","result":{}}`,                   // a response to nothing
	`{"jsonrpc":"2.0","id":"r-` + canary + `","method":"` + canary + `/x"}`, // an unknown method
}

// Issue 8: no decode error and no log line quotes a message's bytes.
func TestDecodeErrorsDoNotQuote(t *testing.T) {
	for _, l := range canaryLines {
		if _, err := Decode([]byte(l)); err != nil && strings.Contains(err.Error(), canary) {
			t.Errorf("Decode(%s): the error quotes the input: %v", l, err)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestConnLogsDoNotQuote(t *testing.T) {
	eachWire(t, func(t *testing.T, w wire) {
		var logs lockedBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := newPeer(t, w, nil, Options{AnswerBadInput: true, Logger: logger}, Limits{MaxMessageBytes: 4096})
		for _, l := range canaryLines {
			p.send(l)
		}
		p.send(`{"jsonrpc":"2.0","id":9,"method":"m","params":{"x":"` + canary + strings.Repeat("y", 8192) + canary + `"}}`) // too large
		p.send(`{"jsonrpc":"2.0","id":99,"method":"ping","params":{}}`)
		for string(p.recvMsg().ID) != "99" {
		}
		if !strings.Contains(logs.String(), "bad message") {
			t.Fatalf("no bad message was logged:\n%s", logs.String())
		}
		if strings.Contains(logs.String(), canary) {
			t.Errorf("a log line quotes a message:\n%s", logs.String())
		}
	})
}

func TestLogID(t *testing.T) {
	for id, verbatim := range map[string]bool{`1`: true, `-12`: true, `12345678901234567890`: true, `123456789012345678901`: false, `"a"`: false, `1e3`: false, `{}`: false} {
		v := LogID([]byte(id))
		if got := v.Kind() == slog.KindString && v.String() == id; got != verbatim {
			t.Errorf("LogID(%s) = %v", id, v)
		}
	}
	if LogMethod("tools/call") != "tools/call" || strings.Contains(LogMethod(canary), canary) {
		t.Error("LogMethod")
	}
}

func TestDescribeJSONError(t *testing.T) {
	var v struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	for _, in := range []string{`{"n":1e999` + `}`, `{"n":7319462810553799999999}`, `{"s":7319462810553799}`, `{"n":"` + canary + `"}`, `{"` + canary + ``, canary, `[` + canary + `]`} {
		err := json.Unmarshal([]byte(in), &v)
		if err == nil {
			t.Fatalf("%s decoded", in)
		}
		d := DescribeJSONError(err).Error()
		if strings.Contains(d, canary) || strings.Contains(d, "73194628") || strings.Contains(d, "1e999") {
			t.Errorf("DescribeJSONError(%v) = %q quotes the input", err, d)
		}
	}
}
