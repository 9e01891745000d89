// Package upstreamtest provides an in-memory upstream.Launcher for tests,
// as net/http/httptest does for HTTP servers.
//
// A Launcher maps server names to functions that serve one MCP connection.
// Each launch connects the gate's side to a fresh call of the function over
// a pair of in-memory pipes, so tests of the pool and the proxy run real
// go-sdk servers without spawning processes:
//
//	l := &upstreamtest.Launcher{Servers: map[string]upstreamtest.ServeFunc{
//		"docs": upstreamtest.GoSDK(func(s *mcp.Server) {
//			mcp.AddTool(s, &mcp.Tool{Name: "search"}, search)
//		}),
//	}}
//	pool := upstream.NewPool(l.Configs(), upstream.PoolOptions{Launcher: l, ...})
//
// The Launcher counts launches per server, so single-flight starts can be
// checked, and can be told to fail launches.
//
// A PipeLauncher goes one step further from a process: its servers are
// rpc.Handlers served by an rpc.Conn over an rpc.Pipe, with no byte stream
// in between, as an upstream that is not a process (an HTTP one) is.
package upstreamtest
