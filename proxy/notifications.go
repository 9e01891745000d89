package proxy

import (
	"strings"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// Notifications the gate does not know (an extension's, a vendor's,
// "notifications/x-…") are relayed from the upstream that sent them to the
// hosts of that upstream's child (the sessions of its pool key), through
// the same neutraliser as everything else an upstream says: a host that
// speaks the extension hears its server as it would directly, and the
// gate need not know the extension. What MCP itself defines is never
// relayed this way: the gate acts on the notifications it knows
// (upstreamNotifications), and the rest are either the client's to send
// (initialized, roots/list_changed, cancelled, which the message layer
// handles per request) or about what the gate does not relay (tasks).
//
// A method name is relayed only if it is in MCP's notifications/ namespace
// (a name such as "elicitation/create" is a request's, whatever its lack of
// an id) and short printable ASCII: it is written to the host as is, and
// shown in its logs.

// mcpNotifications are MCP's own notification methods that an upstream's
// notification is never relayed as.
var mcpNotifications = map[string]bool{
	"notifications/initialized":            true,
	"notifications/cancelled":              true,
	"notifications/roots/list_changed":     true,
	"notifications/tasks/status":           true,
	"notifications/progress":               true,
	"notifications/message":                true,
	"notifications/resources/updated":      true,
	"notifications/resources/list_changed": true,
	"notifications/tools/list_changed":     true,
	"notifications/prompts/list_changed":   true,
	"notifications/elicitation/complete":   true,
}

// relayUnknown reports whether an upstream notification the gate does not
// act on is relayed to the host.
func relayUnknown(method string) bool {
	if mcpNotifications[method] || len(method) > 128 || !strings.HasPrefix(method, "notifications/") {
		return false
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// relayUnknownNotification passes the notification to every session of
// the child's key: it belongs to no call.
func (h *upstreamHandler) relayUnknownNotification(msg *rpc.Message) {
	for _, s := range h.g.sessionsOf(h.key) {
		s.relayNotification(h.server, msg.Method, msg.Params)
	}
}
