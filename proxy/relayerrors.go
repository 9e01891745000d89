package proxy

import (
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// neutralRawError is an upstream's error object as it wrote it (rpc.Error's
// Raw: its escapes, members JSON-RPC does not name, a missing message, a
// code that is not an integer), with hidden characters made visible in
// every string of it, message, data and unknown members alike: hosts show
// error messages to the user. Only the neutraliser's changes differ from
// what the upstream sent. false when that cannot be done (a key holding a
// hidden character): the caller then rebuilds the error from its code,
// message and data.
func neutralRawError(werr *rpc.Error) (*rpc.Error, bool) {
	out, n, err := guard.NeutralizeJSON(werr.Raw)
	if err != nil {
		return nil, false
	}
	if n == 0 {
		return werr, true
	}
	msg, _ := guard.Neutralize(werr.Message)
	data, _, derr := guard.NeutralizeJSON(werr.Data)
	if derr != nil {
		data = nil
	}
	return &rpc.Error{Code: werr.Code, Message: msg, Data: data, Raw: out}, true
}
