package proxy

import (
	"encoding/json"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// clientName is the host's clientInfo.name from initialize, or "" when it
// gave none or not a string: it only picks the policy's approval.hosts
// entry, and a host without a name gets the policy's general channels.
func clientName(params json.RawMessage) string {
	ci, ok := rawjson.Get(params, "clientInfo")
	if !ok {
		return ""
	}
	raw, ok := rawjson.Get(ci, "name")
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) > 200 {
		return ""
	}
	return s
}
