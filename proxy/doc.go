// Package proxy is the gate itself: it serves host sessions (one Gate,
// shared; a Session per host connection), aggregates
// the upstream servers' tools, prompts and resources under host-safe names,
// decides every tool call under the policy, and relays everything else
// between the host and the upstream that owns it.
//
// A proxy never rewrites more than it must. Tool definitions, arguments,
// results and errors travel as raw JSON; the gate edits only names (a tool
// or prompt name, a progress token, the server prefix on an upstream's
// elicitation message), so what the host sees is byte for byte what the
// upstream sent (DESIGN.md §2).
package proxy
