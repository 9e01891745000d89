// Package proxy is the gate itself. A Gate holds what the host sessions of
// one process share (the policy, the upstream pool, the catalog snapshots,
// the audit log); a Session is one host connection, acting for one
// Identity, and shares upstream children, and their catalog, only with
// sessions of the same identity and upstream-facing capabilities (poolKey). Together they
// aggregate the upstream servers' tools, prompts and resources under
// host-safe names, decide every request that reaches an upstream under the
// policy (one pipeline, pipeline.go), and relay everything else between
// the host and the upstream that owns it.
//
// A proxy never rewrites more than it must. Tool definitions, arguments,
// results and errors travel as raw JSON; the gate edits only names (a tool
// or prompt name, a progress token, the server prefix on an upstream's
// elicitation message), so what the host sees is byte for byte what the
// upstream sent (DESIGN.md §2).
package proxy
