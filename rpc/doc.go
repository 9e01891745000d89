// Package rpc is the gate's JSON-RPC 2.0 layer, in two parts.
//
// Framing: a Transport reads and writes whole messages. Stream carries
// newline-delimited messages over a byte stream (the host's stdio, an
// upstream child's pipes); Pipe is an in-memory pair for tests; an HTTP
// front end or upstream is another implementation. A transport bounds the
// size of a message, salvages the id of one it cannot use (a MessageError
// for that message alone), queues what is written, and reports a peer that
// stops reading (StallError) or cannot be written to (WriteError).
//
// Peering: a Conn runs on any Transport: request/response correlation,
// cancellation both ways, handlers for the peer's calls, with every payload
// kept raw.
//
// The go-sdk's own connection decodes a stream with a JSON decoder, which
// ends the session at the first line that is not JSON; a proxy must instead
// answer that one message with an error and carry on (issue #2, "Bad
// input"), keep request IDs exactly as sent, and pass results through
// without a second encoding pass. The error type is the gate's own (the
// binary does not link the go-sdk), and errors keep their code, message and
// data end to end.
//
// A Stream reads and writes on goroutines of its own, so that neither a
// peer that holds its output open (a host that never closes stdin) nor one
// that stops reading its input can keep the gate from shutting down or hold
// up callers past their contexts.
package rpc
