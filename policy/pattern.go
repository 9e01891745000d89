package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gobwas/glob"
	"github.com/gobwas/glob/syntax"
)

// A pattern is one glob of the policy, compiled once at load into the parts
// the index needs.
//
// A name is <namespace>:<server>:<item> (or sampling:<server>), and most
// patterns have a literal namespace, a server segment without colons and an
// item part, e.g. mcp:github:get_* or mcp:*:read_file. Matching such a
// pattern against the whole name is the same as matching the server segment
// against the call's server and the item part against the call's name, as
// long as neither the server segment nor the server can hold a colon: the
// literal prefix then fixes where each part starts and ends. So the index can
// match the parts directly, bucket patterns by literal server, look up
// literal items in a map, and never build the whole name on the common path.
// The patterns that do not decompose (a server segment with `**`, a class
// or a colon) and calls whose server holds a colon fall back to matching the
// whole name, which is always correct.
type pattern struct {
	text string
	// all is set for the pattern `**`: it matches every name of every kind.
	all  bool
	kind Kind
	// full matches the whole name; every pattern has it. It is what the slow
	// path and the reference evaluator in the tests use.
	full *glob.Pattern

	// The decomposed form, when split is set.
	split bool
	// serverLit is the literal server segment when serverGlob is nil and
	// anyServer is false.
	serverLit  string
	serverGlob *glob.Pattern
	anyServer  bool
	// item is how the name (tool, prompt, URI) is matched; sampling patterns
	// have no item part and match any (empty) name.
	item itemMatcher
}

// itemMatcher matches the item part of a name.
type itemMatcher struct {
	any bool
	lit string
	g   *glob.Pattern // nil when the item part is literal or any
	// prefix is the literal text a name must start with to match g: a
	// comparison that rejects most names before the glob engine runs.
	prefix string
}

func (m *itemMatcher) match(s string) bool {
	switch {
	case m.any:
		return true
	case m.g != nil:
		return strings.HasPrefix(s, m.prefix) && m.g.Match(s)
	}
	return s == m.lit
}

// literalPrefix returns the text before a glob's first meta character.
func literalPrefix(s string) string {
	for i := 0; i < len(s); i++ {
		if syntax.IsSpecial(s[i]) {
			return s[:i]
		}
	}
	return s
}

// literal reports whether s holds no glob meta character, so that it matches
// exactly itself.
func literal(s string) bool {
	for i := 0; i < len(s); i++ {
		if syntax.IsSpecial(s[i]) {
			return false
		}
	}
	return true
}

// patternError is a problem with a pattern at a byte offset in its text.
type patternError struct {
	offset int
	msg    string
}

func (e *patternError) Error() string { return e.msg }

// compilePattern compiles one policy glob with `:` as separator.
func compilePattern(text string) (*pattern, error) {
	p := &pattern{text: text}
	g, err := glob.Compile(text, ':')
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			return nil, &patternError{offset: se.Offset, msg: fmt.Sprintf("the glob %q is invalid (%s at offset %d); expected a glob such as mcp:github:get_*", text, se.Reason, se.Offset)}
		}
		return nil, &patternError{msg: fmt.Sprintf("the glob %q is invalid (%v); expected a glob such as mcp:github:get_*", text, err)}
	}
	p.full = g
	if text == "**" {
		// Every namespace, server and name: the parts match anything too.
		p.all, p.split, p.anyServer, p.item.any = true, true, true, true
		return p, nil
	}
	ns, rest, _ := strings.Cut(text, ":")
	kind := Kind(numKinds)
	if len(ns) < len(text) {
		for k, s := range namespaces {
			if s == ns {
				kind = Kind(k)
			}
		}
	}
	if kind == numKinds {
		return nil, &patternError{msg: fmt.Sprintf("the glob %q does not start with a namespace; expected mcp:<server>:<tool>, prompt:<server>:<name>, resource:<server>:<uri>, sampling:<server>, or ** for every name", text)}
	}
	p.kind = kind
	// The namespace is literal, so the rest of the pattern compiles on its
	// own. A part that compiles as a whole may still fail alone (it never
	// should); the pattern then keeps the whole-name path.
	if kind == KindSampling {
		if rest == "" {
			return nil, &patternError{msg: fmt.Sprintf("the glob %q has an empty server; expected sampling:<server>", text)}
		}
		// sampling:<rest> matches sampling:<server> exactly when <rest>
		// matches <server>: no decomposition condition is needed.
		if err := p.setServer(rest, true); err != nil {
			return p, nil
		}
		p.split = true
		p.item.any = true
		return p, nil
	}
	if rest == "**" {
		p.split, p.anyServer, p.item.any = true, true, true
		return p, nil
	}
	cut := topLevelColon(rest)
	if cut < 0 {
		if !strings.Contains(rest, "**") && !strings.ContainsAny(rest, "{[\\") {
			return nil, &patternError{msg: fmt.Sprintf("the glob %q has no name part, so it can never match; expected %s:<server>:<name> (%s:*:* is every name of every server, %s:** too)", text, ns, ns, ns)}
		}
		return p, nil
	}
	server, item := rest[:cut], rest[cut+1:]
	if strings.Contains(server, ":") || strings.Contains(server, "[") || strings.Contains(server, "**") {
		// The server segment might match a colon: keep the whole-name path.
		return p, nil
	}
	if err := p.setServer(server, false); err != nil {
		return p, nil
	}
	switch {
	case item == "**":
		p.item.any = true
	case literal(item):
		p.item.lit = item
	default:
		ig, err := glob.Compile(item, ':')
		if err != nil {
			return p, nil
		}
		p.item.g = ig
		p.item.prefix = literalPrefix(item)
	}
	p.split = true
	return p, nil
}

// setServer sets the server part: a literal, any server, or a glob.
func (p *pattern) setServer(s string, sampling bool) error {
	switch {
	case s == "**" || (!sampling && s == "*"):
		// A sampling server is the whole rest of the name and may hold a
		// colon, which `*` does not match; the caller guarantees colon-free
		// servers for the other kinds.
		p.anyServer = true
	case literal(s):
		p.serverLit = s
	default:
		g, err := glob.Compile(s, ':')
		if err != nil {
			return err
		}
		p.serverGlob = g
	}
	return nil
}

// topLevelColon returns the index of the first colon of s that separates
// segments, skipping escaped colons and those inside {...} and [...].
func topLevelColon(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			// A class runs to the next unescaped ']'.
			for i++; i < len(s) && s[i] != ']'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case ':':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// literalServer returns the server key the pattern names literally, if any.
func (p *pattern) literalServer() (string, bool) {
	if !p.split || p.anyServer || p.serverGlob != nil {
		return "", false
	}
	return p.serverLit, true
}

// matchServer matches the server part of a split pattern.
func (p *pattern) matchServer(server string) bool {
	switch {
	case p.anyServer:
		return true
	case p.serverGlob != nil:
		return p.serverGlob.Match(server)
	}
	return server == p.serverLit
}

// matchParts matches a split pattern against a call's parts; the caller
// guarantees the call's kind and, for kinds with an item part, a server
// without colons.
func (p *pattern) matchParts(server, name string) bool {
	return p.matchServer(server) && p.item.match(name)
}

// matchFull matches a whole policy name.
func (p *pattern) matchFull(name string) bool { return p.full.Match(name) }
