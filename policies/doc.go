// Package policies embeds the policy files that ship with mcp-gate: the
// default that serves when no policy is given (default.yaml, fallback: ask)
// and the commented examples a security team starts from (read-only.yaml,
// developer.yaml, locked-down.yaml). Package policy parses them; its tests
// prove that each one parses cleanly and decides as its case file says.
package policies
