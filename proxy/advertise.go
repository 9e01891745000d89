package proxy

import (
	"encoding/json"
	"sync"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// checkInitialize refuses an initialize whose params lack the protocol
// revision the host speaks: MCP requires it, and without it the gate would
// have to guess which revision's rules (elicitation modes, titles) the host
// follows.
func checkInitialize(params json.RawMessage) error {
	v, ok := rawjson.Get(params, "protocolVersion")
	if !ok {
		return rpc.Errorf(rpc.CodeInvalidParams, `initialize: params need a "protocolVersion" string, the MCP revision the host speaks (such as "2025-11-25"); none was given`)
	}
	if s, isString := rawjson.String(v); !isString || s == "" {
		return rpc.Errorf(rpc.CodeInvalidParams, `initialize: "protocolVersion" must be a non-empty string, the MCP revision the host speaks (such as "2025-11-25")`)
	}
	return nil
}

// knownCaps is what each upstream server declared the last time one of its
// children started, whatever the pool key: a server's capabilities are its
// program's, not a session's. It tells the gate which of its own
// capabilities are worth advertising.
type knownCaps struct {
	mu     sync.Mutex
	server map[string]upstream.Capabilities
}

func (k *knownCaps) note(server string, c upstream.Capabilities) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.server == nil {
		k.server = map[string]upstream.Capabilities{}
	}
	k.server[server] = c
}

// noteCached records what a catalog cache entry says server declared,
// unless a child of it has started in this process (note), whose live
// answer is newer: so a session whose lists come from the cache is told
// only of capabilities some upstream has, as one after the starts is.
func (k *knownCaps) noteCached(server string, c upstream.Capabilities) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, live := k.server[server]; live {
		return
	}
	if k.server == nil {
		k.server = map[string]upstream.Capabilities{}
	}
	k.server[server] = c
}

// of returns the capabilities of every one of servers, and false when any
// of them is not known yet.
func (k *knownCaps) of(servers []string) ([]upstream.Capabilities, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]upstream.Capabilities, 0, len(servers))
	for _, s := range servers {
		c, ok := k.server[s]
		if !ok {
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// advertised is the capabilities the gate declares to a host: each one
// that some upstream has, once every configured server's capabilities are
// known (a child of it has started in this process); until then all of
// them, since the gate cannot tell yet. listChanged is always declared:
// the gate itself sends list_changed when an upstream restarts with other
// lists, whether or not the upstream announces changes.
//
// tools and logging are always declared, whatever the upstreams have: they
// are how the gate itself reaches the host when it cannot serve (trouble.go:
// a servers file or policy that does not load answers tools/list with the
// error, a refused entry or a failed start is a log notification). A gate
// with nothing to serve that declared no tools would never be asked, and
// its host would show a working server with no tools.
func (g *Gate) advertised() map[string]any {
	all := map[string]any{
		"tools":       map[string]any{"listChanged": true},
		"prompts":     map[string]any{"listChanged": true},
		"resources":   map[string]any{"listChanged": true, "subscribe": true},
		"completions": map[string]any{},
		"logging":     map[string]any{},
	}
	caps, ok := g.known.of(g.pool.Names())
	if !ok {
		return all
	}
	tools, logging := true, true // the gate's own channels (above)
	var prompts, resources, subscribe, completions bool
	for _, c := range caps {
		prompts = prompts || c.Prompts
		resources = resources || c.Resources
		subscribe = subscribe || c.ResourcesSubscribe
		completions = completions || c.Completions
	}
	out := map[string]any{}
	if tools {
		out["tools"] = all["tools"]
	}
	if prompts {
		out["prompts"] = all["prompts"]
	}
	if resources {
		out["resources"] = map[string]any{"listChanged": true, "subscribe": subscribe}
		if !subscribe {
			out["resources"] = map[string]any{"listChanged": true}
		}
	}
	if completions {
		out["completions"] = all["completions"]
	}
	if logging {
		out["logging"] = all["logging"]
	}
	return out
}
