// Package rpc is the gate's JSON-RPC 2.0 peer: newline-delimited framing,
// request/response correlation, cancellation, with every payload kept raw.
//
// The gate speaks to the host and to each upstream through one Conn each.
// The go-sdk's own connection decodes a stream with a JSON decoder, which
// ends the session at the first line that is not JSON; a proxy must instead
// answer that one message with an error and carry on (issue #2, "Bad
// input"), keep request IDs exactly as sent, and pass results through
// without a second encoding pass. Wire types (jsonrpc.Error, the error codes)
// are the go-sdk's, so errors keep their code, message and data end to end.
//
// Each Conn reads and writes on goroutines of its own, so that neither a
// peer that holds its output open (a host that never closes stdin) nor one
// that stops reading its input can keep the gate from shutting down or hold
// up callers past their contexts.
package rpc
