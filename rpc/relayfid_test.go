package rpc

import (
	"context"
	"errors"
	"testing"
)

// A decoded error is written back as the peer wrote it.
func TestErrorRelayedRaw(t *testing.T) {
	for _, e := range []string{
		`{"code":-32000,"message":"a \"q\" \u00e9 \/ x","data":{"n":9007199254740993}}`,
		`{"code":-32001,"message":"m","x-retry-after":5,"data":null}`,
		`{"code":-32002}`,
		`{"code":-32000.5,"message":"m"}`,
		`{ "message" : "m", "code" : 1e3 }`,
	} {
		m, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"error":` + e + `}`))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		out, err := appendMessage(nil, &Message{ID: m.ID, Error: m.Error})
		if err != nil || string(out) != `{"jsonrpc":"2.0","id":1,"error":`+e+`}` {
			t.Errorf("%s written as %s (%v)", e, out, err)
		}
	}
	m, _ := Decode([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000.5,"message":"m"}}`))
	if m.Error.Code != CodeInternalError {
		t.Errorf("a fractional code reads as %d", m.Error.Code)
	}
}

// The peer's cancellation is passed on with only the request id changed.
func TestCancelParams(t *testing.T) {
	cause := &PeerCancelled{Params: []byte(`{"requestId":7,"reason":"r \u00e9","x":[1]}`)}
	if !errors.Is(cause, context.Canceled) {
		t.Error("a PeerCancelled is not a context.Canceled")
	}
	p, err := cancelParams([]byte(`"gate-3"`), cause)
	if err != nil || string(p) != `{"requestId":"gate-3","reason":"r \u00e9","x":[1]}` {
		t.Errorf("got %s %v", p, err)
	}
	p, _ = cancelParams([]byte(`4`), context.Canceled)
	if string(p) != `{"requestId":4,"reason":"context canceled"}` {
		t.Errorf("own cancellation: %s", p)
	}
}
