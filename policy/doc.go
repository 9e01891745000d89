// Package policy decides every call that passes through mcp-gate: it parses
// the security team's policy file strictly, compiles it once into an
// immutable, indexed snapshot, and answers allow, ask or deny for a call
// named in one of four namespaces:
//
//	mcp:<server>:<tool>            a tool call (the upstream's original tool name)
//	prompt:<server>:<prompt name>  a prompt
//	resource:<server>:<uri>        a resource
//	sampling:<server>              an upstream's request to use the host's model
//
// The first two colons end the namespace and the server; the item (tool
// name, prompt name or URI) is the rest, colons included. A glob splits the
// same way and its name part is matched against the item whole, so no name
// an upstream chooses can change which server or rule a glob matches.
//
// # Semantics
//
// The most restrictive matching rule wins (deny > ask > allow), whatever the
// order of the lines, so an allow can never override a deny. When nothing
// matches, a tool call gets the policy's fallback (ask or deny, chosen on
// purpose: there is no default), a sampling request is denied, and a prompt
// or resource is allowed: those two are governed only by unconditional deny,
// which also hides them from lists. Conditions are CEL expressions over args,
// server and tool with a bounded cost; a condition that fails to evaluate
// counts as true for deny and ask rules and as false for allow rules, so
// errors fail closed.
//
// A [Decision] is a pure function of the snapshot and the [Call] (apart from
// the path functions path.within and path.has_segment, which look at the
// file system's symlinks) and names the rule that decided it, the reason,
// and the snapshot's revision.
//
// # Paths and URIs
//
// The kernel and the servers in front of it read `..` after a symlink
// differently, so a decision whose conditions call a path function is made
// once with paths read as the kernel reads them (symlinks, then `..`) and
// once as normalising servers do (`..`, then symlinks), each also with
// names compared regardless of case, as case-insensitive file systems open
// them; the most restrictive decision wins. Argument names are looked up
// regardless of case, as Go servers read them, and, when that found one
// spelled otherwise, exactly as well, the most restrictive again winning.
// A resource URI is decided as sent, in its canonical form, as WHATWG URL
// parsers read it and, for file: URIs, by its path under both readings and
// regardless of case, again keeping the most restrictive decision.
//
// # Speed
//
// Patterns are indexed at load by namespace and literal server key, exact
// tool names are looked up in a map, and the search stops at the first
// unconditional rule of the most restrictive level. A decision over
// glob-only rules does not allocate; the arguments are decoded only when a
// rule with a condition matches the name, and then once per decision.
//
// # Reload
//
// A [Store] holds the current snapshot behind an atomic pointer; [Watch]
// keeps it in step with the file, validating every new version fully before
// swapping it in, so a reader never sees a half-built policy.
//
// # Tests as data
//
// [ParseCases] reads a YAML file of calls and expected verdicts that runs
// through the real parser; the package's own cases live in testdata/cases and
// users run theirs with `mcp-gate check --tests FILE`.
package policy
