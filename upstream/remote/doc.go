// Package remote reaches MCP servers over HTTP: the Streamable HTTP
// transport of MCP 2025-11-25 ("type": "http" in the servers file) and the
// legacy HTTP+SSE transport of 2024-11-05 ("type": "sse").
//
// Each is an rpc.Transport of whole messages, so the gate's own message
// layer (rpc.Conn) runs on it exactly as on a child's pipes, and an
// upstream.Connection, so the pool gives a remote server the treatment of
// a stdio one: started (here: connected) on first need, bounded by the
// start timeout, its failures reported, restarted with backoff. Launcher
// picks the transport from the entry's type, and leaves stdio entries to
// the launcher it wraps.
//
// What comes from the server is bounded like a child's output: every body
// and every SSE event is read up to the message limit, and a larger one
// costs that message alone (an rpc.MessageError, which fails the call it
// answered), never the gate's memory.
//
// The headers of an entry often carry a bearer token. They are sent to
// the entry's origin only (redirects are not followed, and a legacy
// server's endpoint event may not name another origin), and never appear
// in a log line or an error: errors name the URL without its query or
// user info, and no header value.
package remote
