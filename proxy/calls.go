package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

func (g *Gate) listTools(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return g.listNamed(ctx, &g.tools, policy.KindTool, params)
}

func (g *Gate) listPrompts(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return g.listNamed(ctx, &g.prompts, policy.KindPrompt, params)
}

// callParams is what the gate reads of a tools/call or prompts/get; the
// rest of the params travels untouched.
type callParams struct {
	name string
	args json.RawMessage // nil when absent
}

func parseCallParams(method string, params json.RawMessage, argsKey string) (callParams, error) {
	if len(params) == 0 || params[0] != '{' {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: params must be an object with a %q", method, "name")
	}
	// Duplicate and case-variant keys were refused where the host's
	// message was read (checkHostParams): the params are unambiguous here.
	name, ok := rawjson.GetString(params, "name")
	if !ok || name == "" {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: params need a non-empty string %q", method, "name")
	}
	args, ok := rawjson.Get(params, argsKey)
	if ok && args[0] != '{' && string(args) != "null" {
		return callParams{}, rpc.Errorf(rpc.CodeInvalidParams, "%s: %q must be an object", method, argsKey)
	}
	return callParams{name: name, args: args}, nil
}

func (g *Gate) callTool(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	p, err := parseCallParams("tools/call", params, "arguments")
	if err != nil {
		return nil, err
	}
	key, ok := g.resolve(ctx, &g.tools, p.name)
	if !ok {
		return nil, g.unknown("tool", p.name)
	}
	// One snapshot for the whole call: the decision, the approval timeout
	// and the guard's settings all come from the same revision.
	pol := g.policy.Current()
	v := g.decide(ctx, pol, policy.Call{Kind: policy.KindTool, Server: key.Server, Name: key.Name, Args: p.args}, p.name)
	if err := ctx.Err(); err != nil {
		return nil, err // withdrawn while a human was asked: nothing is sent
	}
	if !v.allow {
		return refusal("mcp-gate denied this call: " + v.reason), nil
	}
	// The upstream gets exactly the params that were decided on, with only
	// the name changed back to its own.
	fwd, err := rawjson.Set(params, "name", rawjson.AppendString(nil, key.Name))
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "tools/call: %v", err)
	}
	res, err := g.forward(ctx, key.Server, "tools/call", fwd)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || res[0] != '{' {
		return nil, rpc.Errorf(rpc.CodeInternalError, "upstream %q answered tools/call with a result that is not an object", key.Server)
	}
	return g.guardResult(pol, key.Server, key.Name, res), nil
}

func (g *Gate) getPrompt(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	p, err := parseCallParams("prompts/get", params, "arguments")
	if err != nil {
		return nil, err
	}
	key, ok := g.resolve(ctx, &g.prompts, p.name)
	if !ok {
		return nil, g.unknown("prompt", p.name)
	}
	pol := g.policy.Current()
	if v := g.decide(ctx, pol, policy.Call{Kind: policy.KindPrompt, Server: key.Server, Name: key.Name, Args: p.args}, p.name); !v.allow {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, deniedError("the prompt "+p.name, v)
	}
	fwd, err := rawjson.Set(params, "name", rawjson.AppendString(nil, key.Name))
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "prompts/get: %v", err)
	}
	res, err := g.forward(ctx, key.Server, "prompts/get", fwd)
	if err != nil {
		return nil, err
	}
	return g.guardOther(key.Server, key.Name, "prompts/get", "messages", res)
}

// unknown is the error for a name not in the catalog. When the name's prefix
// is a server that could not be listed, it says why, which is what the user
// needs to hear.
func (g *Gate) unknown(noun, name string) error {
	if server, _, ok := strings.Cut(name, "__"); ok && g.pool.Has(server) {
		if err := g.pool.LastError(server); err != nil {
			return rpc.Errorf(rpc.CodeInvalidParams, "unknown %s %q: its server %q is unavailable: %v", noun, name, server, err)
		}
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "unknown %s %q: it is not in this gate's %ss/list", noun, name, noun)
}

// complete routes completion/complete by its reference: a prompt (renamed
// back to the upstream's name) or a resource URI.
func (g *Gate) complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	ref, _ := rawjson.Get(params, "ref")
	typ, _ := rawjson.GetString(ref, "type")
	switch typ {
	case "ref/prompt":
		name, _ := rawjson.GetString(ref, "name")
		key, ok := g.resolve(ctx, &g.prompts, name)
		if !ok {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "completion/complete: unknown prompt %q", name)
		}
		// Completing a denied prompt's arguments would reach its server.
		if v := g.decide(ctx, g.policy.Current(), policy.Call{Kind: policy.KindPrompt, Server: key.Server, Name: key.Name}, name); !v.allow {
			return nil, deniedError("completion for the prompt "+name, v)
		}
		fwd, err := rawjson.SetPath(params, []string{"ref", "name"}, rawjson.AppendString(nil, key.Name))
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "completion/complete: %v", err)
		}
		return g.forward(ctx, key.Server, "completion/complete", fwd)
	case "ref/resource":
		uri, _ := rawjson.GetString(ref, "uri")
		server, err := g.resourceOwner(ctx, uri)
		if err != nil {
			return nil, err
		}
		pol := g.policy.Current()
		if v := g.decide(ctx, pol, policy.Call{Kind: policy.KindResource, Server: server, Name: uri}, uri); !v.allow {
			return nil, deniedError("completion for the resource "+uri, v)
		}
		// A template is completed for the URI it makes with the values
		// given so far: decided as that URI too.
		if args := completionArgs(params); args != nil && strings.Contains(uri, "{") {
			if u := expandTemplate(uri, args); u != uri {
				if v := g.decide(ctx, pol, policy.Call{Kind: policy.KindResource, Server: server, Name: u}, uri); !v.allow {
					return nil, deniedError("completion for the resource template "+uri+" with the values given", v)
				}
			}
		}
		return g.forward(ctx, server, "completion/complete", params)
	}
	return nil, rpc.Errorf(rpc.CodeInvalidParams, `completion/complete: "ref.type" must be "ref/prompt" or "ref/resource", found %q`, typ)
}

// forward sends a request to an upstream, starting it if needed, with the
// host's progress token swapped for one of the gate's own so that progress
// can be routed back (and an upstream cannot speak for another's request).
func (g *Gate) forward(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	s, err := g.pool.Session(ctx, server)
	if err != nil {
		return nil, upstreamError(server, method, err)
	}
	if meta, ok := rawjson.Get(params, "_meta"); ok {
		if tok, ok := rawjson.Get(meta, "progressToken"); ok {
			gateTok, release := g.progress.add(server, tok)
			defer release()
			params, err = rawjson.SetPath(params, []string{"_meta", "progressToken"}, gateTok)
			if err != nil {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s: %v", method, err)
			}
		}
	}
	res, err := s.Call(ctx, method, params)
	if err != nil {
		return nil, upstreamError(server, method, err)
	}
	return res, nil
}

// decisionID names one decision in the audit log.
func (g *Gate) decisionID() string {
	return fmt.Sprintf("%s-%d", g.session, g.seq.Add(1))
}

// itemTitle is the title the upstream gave a tool or prompt, for the
// approval question (which shows it quoted and bounded), or "".
func (g *Gate) itemTitle(k policy.Kind, server, name string) string {
	var c *catalog
	switch k {
	case policy.KindTool:
		c = &g.tools
	case policy.KindPrompt:
		c = &g.prompts
	default:
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := c.servers[server]
	if l == nil {
		return ""
	}
	for _, e := range l.entries {
		if e.name == name {
			if t, ok := rawjson.GetString(e.raw, "title"); ok {
				return t
			}
			if ann, ok := rawjson.Get(e.raw, "annotations"); ok {
				t, _ := rawjson.GetString(ann, "title")
				return t
			}
			return ""
		}
	}
	return ""
}
