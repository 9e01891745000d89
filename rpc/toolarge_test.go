package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The message limit holds for what a Stream writes as well as for what it
// reads: a peer bounds its reads too, and some (the TypeScript SDK's stdio
// reader at 10 MiB, Claude Code's at 16) end the whole connection on a
// longer line. A response over the limit is answered with a short error in
// its place (and reported to OnDropped), whatever its kind or size class
// (a result copied into the line, a large one written from its own bytes,
// an error's data); a notification or request over it is not written, its
// writer gets a *TooLargeError; a message of exactly the limit goes out;
// the connection goes on serving.
func TestWriteTooLarge(t *testing.T) { forPipes(t, testWriteTooLarge) }

func testWriteTooLarge(t *testing.T, pipe func(*testing.T) (io.ReadCloser, io.WriteCloser)) {
	const limit = 16 << 10 // over smallMessage, under largePayload: "over" is copied into its line
	connR, peerW := pipe(t)
	peerR, connW := pipe(t)
	defer peerW.Close()
	// The response to id 7 with a result of n bytes of JSON string.
	response := func(n int) string {
		head := `{"jsonrpc":"2.0","id":7,"result":"`
		return head + strings.Repeat("r", n-len(head)-2) + `"}`
	}
	if got, err := Encode(&Message{ID: json.RawMessage("7"), Result: json.RawMessage(`"rr"`)}); err != nil || string(got) != response(len(got)) {
		t.Fatalf("the test's wire form is not the encoder's: %s, %v", got, err)
	}
	results := map[string]json.RawMessage{}
	result := func(n int) json.RawMessage { // a result making a response of n bytes to id 7
		r := response(n)
		return json.RawMessage(r[len(`{"jsonrpc":"2.0","id":7,"result":`) : len(r)-1])
	}
	results["exact"] = result(limit)
	results["over"] = result(limit + 1)
	results["large-class"] = result(3 * limit) // written from its own bytes (largePayload)
	dropped := make(chan int, 10)
	conn := New(NewStream(connR, connW, nil, Limits{MaxMessageBytes: limit}), funcs{call: func(_ context.Context, req *Message) (json.RawMessage, error) {
		switch req.Method {
		case "error-data":
			return nil, &Error{Code: 1, Message: "m", Data: json.RawMessage(`"` + strings.Repeat("d", limit) + `"`)}
		case "small":
			return json.RawMessage(`"ok"`), nil
		}
		return results[req.Method], nil
	}}, Options{Peer: "host", Logger: testLogger(t), OnDropped: func(_ *Message, size int, why error) {
		if !errors.As(why, new(*TooLargeError)) {
			t.Errorf("dropped for %v; want a *TooLargeError", why)
		}
		dropped <- size
	}})
	go conn.Run(context.Background())
	defer conn.Close()
	lines := bufio.NewReaderSize(peerR, 4*limit)
	call := func(method string) string {
		t.Helper()
		if _, err := io.WriteString(peerW, `{"jsonrpc":"2.0","id":7,"method":"`+method+`"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if n := len(line) - 1; n > limit {
			t.Errorf("%s: the peer was written a message of %d bytes, over the limit of %d", method, n, limit)
		}
		return line
	}
	if got := call("exact"); got != response(limit)+"\n" {
		t.Errorf("a response of exactly the limit: got %d bytes %.80q; want it whole", len(got)-1, got)
	}
	for _, m := range []string{"over", "large-class", "error-data"} {
		got := call(m)
		if !strings.Contains(got, `"error"`) || !strings.Contains(got, "too large for the host") || !strings.Contains(got, "--max-message-bytes") {
			t.Errorf("%s: got %.300q; want a short error saying the answer is too large", m, got)
		}
		select {
		case n := <-dropped:
			if n <= limit {
				t.Errorf("%s: OnDropped told of %d bytes; want the size over the limit", m, n)
			}
		case <-time.After(hang):
			t.Fatalf("%s: OnDropped was not called", m)
		}
		if got := call("small"); !strings.Contains(got, `"result":"ok"`) {
			t.Fatalf("after %s: the connection no longer serves: %.200q", m, got)
		}
	}
	big := json.RawMessage(`{"x":"` + strings.Repeat("n", limit) + `"}`)
	var tl *TooLargeError
	if err := conn.Notify(context.Background(), "notifications/big", big); !errors.As(err, &tl) || tl.Limit != limit || tl.Size <= limit {
		t.Errorf("Notify of a notification over the limit: %v; want a *TooLargeError", err)
	}
	if ok, err := conn.TryNotify("notifications/big", big); ok || !errors.As(err, &tl) {
		t.Errorf("TryNotify of a notification over the limit: %t, %v; want a *TooLargeError", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if _, err := conn.Call(ctx, "big/request", big); !errors.As(err, &tl) {
		t.Errorf("Call with params over the limit: %v; want a *TooLargeError", err)
	}
	if got := call("small"); !strings.Contains(got, `"result":"ok"`) {
		t.Fatalf("the next line the peer read is not the next answer: %.200q", got)
	}
}
