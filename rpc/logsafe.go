package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mcp-gate/mcp-gate/audit"
)

// A peer chooses its ids and method names, and a hostile or broken one can
// put anything in them (a token pasted by mistake, a prompt injection for
// whoever reads the log). Log lines name them through these helpers, which
// let the protocol's own vocabulary through and describe everything else
// by size and digest (audit.Payload).

// mcpMethods are the method names of the MCP specification (2025-11-25).
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"sampling/createMessage": true, "elicitation/create": true, "roots/list": true,
	"tasks/get": true, "tasks/list": true, "tasks/result": true, "tasks/cancel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/message": true, "notifications/resources/updated": true,
	"notifications/resources/list_changed": true, "notifications/tools/list_changed": true,
	"notifications/prompts/list_changed": true, "notifications/roots/list_changed": true,
	"notifications/elicitation/complete": true, "notifications/tasks/status": true,
}

// LogMethod is a method name for a log line: an MCP method as it is, any
// other name described by size and digest.
func LogMethod(m string) string {
	if mcpMethods[m] {
		return m
	}
	return "unknown method " + audit.PayloadString(m)
}

// LogID is a request id for a log line: a number of up to 20 digits as it
// is (the gate's own ids, and most peers'), anything else described.
func LogID(id json.RawMessage) slog.Value {
	if n := len(id); n > 0 && n <= 20 {
		digits := true
		for i, c := range id {
			if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
				digits = false
				break
			}
		}
		if digits {
			return slog.StringValue(string(id))
		}
	}
	return audit.Payload(id)
}

// DescribeJSONError rewrites an encoding/json error about a peer's bytes
// for a message that may reach a log: encoding/json quotes the offending
// character of a syntax error and the literal of a number that does not fit
// ("cannot unmarshal number 1e999"), and this keeps only the position, the
// kind of value and the field.
func DescribeJSONError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		kind, _, _ := strings.Cut(te.Value, " ") // "number 1e999" → "number"
		field := te.Field
		if field == "" {
			field = "the top level"
		}
		return fmt.Errorf("found a %s at %s (byte %d) where %s was expected", kind, field, te.Offset, te.Type)
	}
	return fmt.Errorf("invalid JSON (%T)", err)
}
