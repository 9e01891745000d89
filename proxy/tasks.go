package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Tasks (MCP 2025-11-25, experimental) are not relayed: mcp-gate answers
// every request it relays synchronously, in both directions, and strips
// task augmentation (the "task" member of a request's params) on the way.
//
// Why not relay them. The gate's host-facing side would have to declare
// tasks.requests.tools.call and then serve tasks/get, tasks/list,
// tasks/result and tasks/cancel and relay notifications/tasks/status for
// tasks that live in an upstream, outlive the call that made them and, in
// the input_required flow, carry the upstream's elicitations inside
// tasks/result instead of during a call, where the gate routes an
// upstream's requests (sessionFor). The decision and the guard are made
// for one request and its one answer; a task splits them across requests
// the gate would have to tie together per session and upstream child.
// Stripping is what the specification asks of a receiver that does not
// declare tasks: it processes the request normally, ignoring the task
// metadata. So a host that task-augments a tools/call through the gate
// (which declares no tasks) gets the tool's normal result, decided and
// guarded like any other, and no task is left running upstream.
//
// The other way, an upstream's task-augmented sampling or elicitation
// request (sent because the host declared tasks.requests.sampling or
// .elicitation, which the gate passes on so that servers register the tools
// that need it) is put to the host without the task member, and the host's
// answer goes back as the request's normal result, which requestors must
// accept. tasks/list and tasks/cancel are not passed on: the gate serves
// no tasks/* request from an upstream.

// stripTask returns params without a top-level "task" member.
func stripTask(params json.RawMessage) (json.RawMessage, bool) {
	// Cheap on the call path: a key spelt "task" has those letters or an
	// escape.
	if len(params) == 0 || params[0] != '{' || (!bytes.Contains(params, []byte("task")) && !bytes.Contains(params, []byte(`\u`))) {
		return params, false
	}
	out, found := rawjson.Delete(params, "task")
	return out, found
}

// upstreamFacing picks, from the capabilities a host declared, those the
// gate passes to its upstreams: elicitation, sampling (without context:
// withoutContext) and roots (whose requests the gate relays to the host), experimental and extensions
// (opaque to the gate: declared by the host, for the servers that know
// them), and of tasks only the request types a server may task-augment
// (tasks.requests.sampling, tasks.requests.elicitation), which the gate
// answers synchronously (stripTask). Anything else the host declared is
// the host's business with the gate. The result is compacted, so that
// hosts declaring the same capabilities in other spacing share children
// (poolKey compares the bytes); it is the upstream-facing profile.
func upstreamFacing(caps json.RawMessage) json.RawMessage {
	out := []byte("{}")
	for _, k := range []string{"elicitation", "sampling", "roots", "experimental", "extensions"} {
		if v, ok := rawjson.Get(caps, k); ok {
			if k == "sampling" {
				// No includeContext is passed to the host (withoutContext),
				// so the servers are not told it may be.
				v, _ = rawjson.Delete(v, "context")
			}
			out, _ = rawjson.Set(out, k, v)
		}
	}
	if tasks, ok := rawjson.Get(caps, "tasks"); ok {
		if reqs, ok := rawjson.Get(tasks, "requests"); ok && len(reqs) > 0 && reqs[0] == '{' {
			keep := []byte("{}")
			for _, k := range []string{"sampling", "elicitation"} {
				if v, ok := rawjson.Get(reqs, k); ok {
					keep, _ = rawjson.Set(keep, k, v)
				}
			}
			if string(keep) != "{}" {
				out, _ = rawjson.Set(out, "tasks", append(append([]byte(`{"requests":`), keep...), '}'))
			}
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, out) == nil {
		out = compact.Bytes()
	}
	return out
}

// untasked is an upstream's request without task augmentation: the gate
// puts it to the host as a plain request and returns the host's answer as
// its result (see above).
func untasked(req *rpc.Message) *rpc.Message {
	p, ok := stripTask(req.Params)
	if !ok {
		return req
	}
	c := *req
	c.Params = p
	return &c
}
