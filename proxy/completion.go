package proxy

import (
	"encoding/json"
	"strings"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// A completion request asks a server to complete one argument of a prompt
// or of a resource template, with the value typed so far and the other
// arguments already given (context.arguments). Its server acts on those
// values (a file server lists the directory a path names), so the gate
// decides a template's completion as the URI the template expands to with
// them, besides the template itself. (A prompt's is decided as the prompt:
// prompts are governed by unconditional denies alone.)

// completionArgs returns the arguments a completion request is about:
// context.arguments with argument.name set to argument.value, or nil when
// there are none. Values that are not strings are left out; MCP makes them
// all strings.
func completionArgs(params json.RawMessage) map[string]string {
	args := map[string]string{}
	if ctx, ok := rawjson.Get(params, "context"); ok {
		if a, ok := rawjson.Get(ctx, "arguments"); ok {
			_ = rawjson.Members(a, func(m rawjson.Member) bool {
				var s string
				if json.Unmarshal(m.Value, &s) == nil {
					args[m.Key] = s
				}
				return true
			})
		}
	}
	if arg, ok := rawjson.Get(params, "argument"); ok {
		name, _ := rawjson.GetString(arg, "name")
		value, _ := rawjson.GetString(arg, "value")
		if name != "" {
			args[name] = value
		}
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// expandTemplate expands an RFC 6570 URI template with args, each value
// inserted as it is (no percent-encoding, so that the URI decided on names
// the path the value names); a variable without a value expands to
// nothing.
func expandTemplate(t string, args map[string]string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		expr := strings.TrimLeft(t[i+1:i+j], "+#./;?&")
		for k, v := range strings.Split(expr, ",") {
			v, _, _ = strings.Cut(v, ":")
			v = strings.TrimSuffix(v, "*")
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(args[v])
		}
		t = t[i+j+1:]
	}
}
