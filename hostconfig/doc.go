// Package hostconfig puts the gate in front of an MCP host in one step, and
// takes it away again: it reads the MCP servers a host (Claude Code, Codex,
// Claude Desktop) registers directly, moves them into the gate's servers
// file, registers the gate in their place, and records what it did so that
// uninstall undoes exactly its own edits.
//
// Why a move and not a copy: a server registered both directly and behind
// the gate is one the model can call without the policy (it sees
// mcp__everything__echo beside mcp__gate__everything__echo). After an
// install the host has only the gate.
//
// Every edit is planned first (Plan), shown as a diff on --dry-run, and
// written only after a backup of each file it changes. Host files are
// edited so that what the edit does not touch keeps its bytes: JSON through
// an order-preserving tree (Tree) re-encoded in the file's own indent, and
// Codex's TOML surgically by table, checked by parsing the result and
// comparing it with the intended document (fail closed when they differ).
// When a file is still exactly as install left it, uninstall writes the
// backup back byte for byte; otherwise it undoes its own edits one by one
// and reports what it could not.
package hostconfig
