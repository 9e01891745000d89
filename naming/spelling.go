package naming

import (
	"errors"
	"fmt"
	"strings"
)

// policyPrefix starts every policy name. Wire names cannot contain ':', so
// it also tells the two families apart.
const policyPrefix = "mcp:"

// ErrHashedWireName is wrapped by ParseSpelling when a wire spelling ends in
// what looks like a hash suffix: such a name was shortened or disambiguated
// and only the catalog (Table.Resolve) knows its key.
var ErrHashedWireName = errors.New("wire name looks hashed and cannot be reversed without the catalog")

// PolicyName returns "mcp:" + server + ":" + tool, the spelling policies
// use, escaped by [FormatPolicyName]. tool is the original name and may
// contain anything, even ':'.
func PolicyName(server, tool string) string {
	return FormatPolicyName("mcp", server, tool)
}

// A policy name is <namespace>:<server>:<item>: the first colon ends the
// namespace, the first unescaped colon after it ends the server, and the
// rest, colons included, is the item (a tool name, prompt name or URI,
// which the upstream chooses). Policy globs split the same way, so no name
// an upstream picks can move a colon into another segment, and a glob's
// item part is matched against the item whole.
//
// The glob meta characters of server and item, and the backslash, are
// escaped with a backslash (a colon in the server too), so that a printed name,
// read back as a glob, matches exactly the name it prints.

// globMeta are the characters a policy glob reads as syntax.
const globMeta = `*?[]{}\`

// EscapeName escapes the glob meta characters of an item (tool name, prompt
// name, URI) with a backslash.
func EscapeName(s string) string { return escape(s, globMeta) }

// EscapeServer escapes a server key for the server segment of a policy name
// or glob: the glob meta characters and ':'.
func EscapeServer(s string) string { return escape(s, globMeta+":") }

func escape(s, meta string) string {
	if !strings.ContainsAny(s, meta) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(meta, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FormatPolicyName spells a name of namespace ns: ns:<server>:<item>, or
// ns:<server> when item is empty and ns is "sampling".
func FormatPolicyName(ns, server, item string) string {
	if ns == "sampling" {
		return ns + ":" + EscapeServer(server)
	}
	return ns + ":" + EscapeServer(server) + ":" + EscapeName(item)
}

// SplitPolicyName reads a policy name back: the namespace up to the first
// colon, the server up to the next unescaped colon, the item the rest, with
// escapes removed ('\x' is x). An unescaped meta character stands for
// itself, since a name is not a glob. hasItem is false when there is no
// colon after the server (sampling:<server>). A trailing lone '\' is an
// error.
func SplitPolicyName(s string) (ns, server, item string, hasItem bool, err error) {
	ns, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", "", false, fmt.Errorf("policy name %q has no ':' after the namespace; expected <namespace>:<server>:<name>", s)
	}
	cut := -1
	for i := 0; i < len(rest); i++ {
		if rest[i] == '\\' {
			i++
			continue
		}
		if rest[i] == ':' {
			cut = i
			break
		}
	}
	srv := rest
	if cut >= 0 {
		srv, item, hasItem = rest[:cut], rest[cut+1:], true
	}
	if server, err = Unescape(srv); err != nil {
		return "", "", "", false, fmt.Errorf("policy name %q: the server %w", s, err)
	}
	if item, err = Unescape(item); err != nil {
		return "", "", "", false, fmt.Errorf("policy name %q: the name %w", s, err)
	}
	return ns, server, item, hasItem, nil
}

// Unescape removes the '\' escapes of a printed name segment.
func Unescape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				return "", fmt.Errorf("%q ends in a lone '\\'; expected '\\' before the character it escapes", s)
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// ParseSpelling translates a name a human typed (for `mcp-gate explain`)
// into a key. It accepts
//
//   - the policy name "mcp:<server>:<tool>": exact, the tool is everything
//     after the second ':', with '\' escapes removed (see [SplitPolicyName]);
//   - the wire name "<server>__<tool>";
//   - the host's name "mcp__<gateName>__<server>__<tool>".
//
// It is best effort for the wire spellings, since the mapping is a table and
// not a formula: a sanitised wire name comes back with '_' where the
// original had other characters, and a hashed one cannot be reversed at all.
// A tool part ending in "_" and 8 to 16 lowercase hex digits is refused with
// an error wrapping ErrHashedWireName, even though an upstream may really
// call a tool that way: a refusal asks for the policy spelling, a guess would
// explain the wrong tool. Use Table.Resolve when the catalog is at hand.
// This is the only function that reads a name back; nothing on the call
// path may use it.
func ParseSpelling(s, gateName string) (Key, error) {
	if strings.HasPrefix(s, policyPrefix) {
		return parsePolicyName(s)
	}
	wire, err := stripHostPrefix(s, gateName)
	if err != nil {
		return Key{}, err
	}
	return parseWireName(s, wire)
}

// Resolve translates any spelling like ParseSpelling, but looks wire
// spellings up in the table first, so sanitised and hashed names resolve to
// their true keys. A wire spelling missing from the table falls back to
// ParseSpelling, because the catalog may lack a server that has not
// started yet.
func (t *Table) Resolve(s, gateName string) (Key, error) {
	if strings.HasPrefix(s, policyPrefix) {
		return ParseSpelling(s, gateName)
	}
	if err := ValidateGateName(gateName); err != nil {
		return Key{}, fmt.Errorf("resolve %q: %w", s, err)
	}
	// The host-prefixed reading wins over a server keyed "mcp"; the bare
	// reading is still tried for that server's names.
	if wire, ok := strings.CutPrefix(s, hostPrefix+gateName+serverSep); ok {
		if k, ok := t.Lookup(wire); ok {
			return k, nil
		}
	}
	if k, ok := t.Lookup(s); ok {
		return k, nil
	}
	return ParseSpelling(s, gateName)
}

func parsePolicyName(s string) (Key, error) {
	_, server, tool, ok, err := SplitPolicyName(s)
	if err != nil {
		return Key{}, err
	}
	if !ok {
		return Key{}, fmt.Errorf("policy name %q has no ':' after the server; expected mcp:<server>:<tool>", s)
	}
	if err := checkServer(s, server); err != nil {
		return Key{}, err
	}
	return Key{Server: server, Name: tool}, nil
}

// stripHostPrefix removes "mcp__<gateName>__" when present. A name that
// carries the prefix of another gate is refused rather than read as server
// "mcp": the user most likely passed the wrong --name.
func stripHostPrefix(s, gateName string) (string, error) {
	if err := ValidateGateName(gateName); err != nil {
		return "", fmt.Errorf("parse %q: %w", s, err)
	}
	if wire, ok := strings.CutPrefix(s, hostPrefix+gateName+serverSep); ok {
		return wire, nil
	}
	if rest, ok := strings.CutPrefix(s, hostPrefix); ok {
		if other, _, ok := strings.Cut(rest, serverSep); ok && other != "" {
			return "", fmt.Errorf("%q has the host prefix of a gate named %q; expected %q for this gate (set --name), or the policy spelling mcp:mcp:<tool> for a server keyed \"mcp\"",
				s, other, hostPrefix+gateName+serverSep)
		}
	}
	return s, nil
}

func parseWireName(s, wire string) (Key, error) {
	if wire == "" {
		return Key{}, fmt.Errorf("%q has an empty wire name; expected <server>__<tool>", s)
	}
	if i := firstNonWire(wire); i >= 0 {
		return Key{}, fmt.Errorf("%q has %s at byte %d; expected a wire name over [A-Za-z0-9_-], or the policy spelling mcp:<server>:<tool>",
			s, describeAt(wire, i), len(s)-len(wire)+i)
	}
	server, tool, ok := strings.Cut(wire, serverSep)
	if !ok {
		return Key{}, fmt.Errorf("%q has no \"__\" between server and tool; expected <server>__<tool>, mcp__<gate>__<server>__<tool> or mcp:<server>:<tool>", s)
	}
	if err := checkServer(s, server); err != nil {
		return Key{}, err
	}
	if suffix, ok := hashSuffix(tool); ok {
		return Key{}, fmt.Errorf("%q ends in %q: %w; expected the policy spelling mcp:%s:<original tool name>",
			s, suffix, ErrHashedWireName, server)
	}
	return Key{Server: server, Name: tool}, nil
}

// checkServer validates the server part of a typed name; the budget is the
// table's business, not the reader's.
func checkServer(s, server string) error {
	if server == "" {
		return fmt.Errorf("%q has an empty server; expected a server key matching ^[a-z0-9][a-z0-9-]*$", s)
	}
	if i := firstNonKey(server); i >= 0 {
		return fmt.Errorf("%q has server %q with %s at byte %d; expected a server key matching ^[a-z0-9][a-z0-9-]*$",
			s, server, describeAt(server, i), i)
	}
	return nil
}

// hashSuffix reports whether tool ends in "_" and HashLen to maxHashLen
// lowercase hex digits, the shape of a hash suffix, and returns that tail.
func hashSuffix(tool string) (string, bool) {
	n := 0
	for n < len(tool) && n <= maxHashLen {
		c := tool[len(tool)-1-n]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			break
		}
		n++
	}
	if n < HashLen || n > maxHashLen || n == len(tool) || tool[len(tool)-1-n] != '_' {
		return "", false
	}
	return tool[len(tool)-1-n:], true
}

// IsServerKey reports whether s has the form of a server key,
// ^[a-z0-9][a-z0-9-]*$ (the budget apart): a policy glob naming any other
// server literally can never match.
func IsServerKey(s string) bool { return isServerKey(s) }
