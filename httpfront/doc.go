// Package httpfront serves gate sessions over MCP's Streamable HTTP
// transport (protocol revision 2025-11-25): one endpoint (default /mcp)
// that takes a POST per client message, answers a request with a JSON body
// or an SSE stream, holds an optional GET stream for what belongs to no
// request, and ends a session on DELETE.
//
// On the same endpoint it serves revision 2026-07-28, chosen per POST by
// the body (modern.go): a request carrying that revision's _meta envelope
// without a session id is one self-contained request, its headers checked
// against its body, served by a proxy session of its own; there are no
// sessions, GET or DELETE in that revision. What follows is the older
// revision's.
//
// A session is created by an initialize POST without an Mcp-Session-Id. Its
// id is 128 random bits; from then on every message carries it, and an id
// the front end does not know (expired, deleted, never issued, or issued to
// another identity) gets 404, so that the client starts over. Each session
// is one proxy session run over a Transport of this package: what the
// client POSTs is what the session reads, and what the session writes is
// routed to a stream:
//
//   - a response goes to the POST that carried its request;
//   - a request or notification written while serving one of the client's
//     requests (the gate's approval question, which is asked from the
//     call's context) goes to that request's SSE stream; a progress
//     notification goes to the stream of the request that holds its token;
//   - anything else (an upstream's question relayed by the gate, a
//     list_changed) goes to the only request in flight with an SSE stream,
//     else to the GET stream, else to the newest SSE stream; a question
//     with no stream to travel on fails at once instead of waiting for an
//     answer that cannot come.
//
// Requests that may make the gate ask the client something or report
// progress (the methods that reach an upstream) are answered on an SSE
// stream; the others (initialize, lists, ping, setLevel) get a JSON body.
//
// Everything is bounded: the body size, the number of sessions, each
// stream's queue (a client that stops reading its stream for the write
// timeout ends its session, as a stdio host that stops reading does), and
// a session's idle time. Requests are refused before they reach a session
// when their Host or Origin is foreign (DNS rebinding: 403 with the
// reason), their credentials do not authenticate (401 with a
// WWW-Authenticate header pointing at the Protected Resource Metadata), or
// their MCP-Protocol-Version is one the gate does not speak (400; 2026-07-28
// is spoken, by the rules of modern.go).
package httpfront
