package rpc

import (
	"context"
	"encoding/json"
)

// servingKey is the context key of the peer request a handler serves.
type servingKey struct{}

// serving names one request of the peer: the transport it came in on and
// its id.
type serving struct {
	t  Transport
	id json.RawMessage
}

// withServing marks ctx as serving the peer's request id, received on t.
// The value is a *serving (a Conn's incomingCall carries one in place).
func withServing(ctx context.Context, t Transport, id json.RawMessage) context.Context {
	return context.WithValue(ctx, servingKey{}, &serving{t, id})
}

// Serving returns the id of the peer's request that ctx serves, when ctx
// descends from a handler's context of a Conn over t. A transport that
// carries several exchanges at once (Streamable HTTP, where every request
// has a response stream of its own) reads it in Write to send what a
// handler writes (a question to the peer, a notification) on the stream of
// the request it belongs to. A context from another Conn gives false: the
// id would be another peer's.
func Serving(ctx context.Context, t Transport) (json.RawMessage, bool) {
	s, ok := ctx.Value(servingKey{}).(*serving)
	if !ok || s.t != t {
		return nil, false
	}
	return s.id, true
}

// WithServing returns ctx marked as serving the peer's request id received
// on t, as a handler's context of a Conn over t is. A Gate relaying an
// upstream's question during a host request uses it, so that the question
// travels on that request's stream.
func WithServing(ctx context.Context, t Transport, id json.RawMessage) context.Context {
	return withServing(ctx, t, id)
}

// Encode returns m's wire form, as a Stream writes it, without the line
// end: a transport that frames messages otherwise (an HTTP body, an SSE
// event) sends these bytes.
func Encode(m *Message) ([]byte, error) { return appendMessage(nil, m) }

// IDKey turns a raw id into a map key under which equal ids (7 and 7.0)
// are one, as a Conn matches them.
func IDKey(id json.RawMessage) string { return idKey(id) }

// DecodeError turns an error of Decode into the *MessageError a transport
// reports for that message alone, keeping raw's head for the log.
func DecodeError(err error, raw []byte) *MessageError { return messageError(err, raw) }

// WithServingOf returns ctx marked as serving what from serves, if from
// serves anything: its values only, not its deadline or cancellation. The
// gate relays an upstream's question, asked during a host request, with
// the host request's mark, so that the host's transport sends it on that
// request's stream.
func WithServingOf(ctx, from context.Context) context.Context {
	s, ok := from.Value(servingKey{}).(*serving)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, servingKey{}, s)
}
