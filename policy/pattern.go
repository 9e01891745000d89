package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gobwas/glob"
	"github.com/gobwas/glob/syntax"
)

// A pattern is one glob of the policy, compiled once at load into the parts
// the index needs.
//
// A name is <namespace>:<server>:<item> (or sampling:<server>): the first
// colon ends the namespace, the next one ends the server, and the item (a
// tool name, prompt name or URI, which the upstream chooses) is the rest,
// colons included. A glob splits the same way, at its first two colons
// outside escapes, classes and alternatives: a literal namespace, a server
// segment matched against the call's server, and an item part matched
// against the call's item whole, so `*` and `?` cross colons there. So no
// name an upstream picks can change which server or which rule a glob
// matches: mcp:shell:* covers every tool of shell, a:b included.
//
// Every glob is matched part by part; none is ever matched against a whole
// name joined with colons, which is what once let a tool named a:b slip
// past mcp:shell:* while mcp:** still saw it.
type pattern struct {
	text string
	// all is set for the pattern `**`: it matches every name of every kind.
	all  bool
	kind Kind

	// serverLit is the literal server segment when serverGlob is nil and
	// anyServer is false.
	serverLit  string
	serverGlob *glob.Pattern
	anyServer  bool
	// item is how the name (tool, prompt, URI) is matched; sampling patterns
	// have no item part and match any (empty) name.
	item itemMatcher
	// itemText is the name part as written, for messages.
	itemText string
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

// literalPrefix returns the text before a glob's first meta character, with
// escapes removed.
func literalPrefix(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			b.WriteByte(s[i])
			continue
		}
		if syntax.IsSpecial(c) {
			break
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unescapeLiteral returns the text a glob without unescaped meta characters
// matches, and whether it is such a glob.
func unescapeLiteral(s string) (string, bool) {
	if !strings.ContainsAny(s, "*?[]{}\\") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			if i+1 == len(s) {
				return "", false
			}
			i++
			b.WriteByte(s[i])
			continue
		}
		if syntax.IsSpecial(c) {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
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

// patternError is a problem with a pattern at a byte offset in its text;
// offset is -1 when the problem concerns the whole pattern.
type patternError struct {
	offset int
	msg    string
}

func (e *patternError) Error() string { return e.msg }

// invisible reports whether r can never be part of a name a glob is meant
// to match as the author sees it: whitespace, control characters, format
// characters (zero-width spaces and joiners, bidirectional controls, the
// byte order mark, the soft hyphen) and the other default-ignorable code
// points. A glob holding one looks like another glob and matches nothing
// the author wrote, so it is refused rather than kept as a silent no-op.
func invisible(r rune) bool {
	return r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) ||
		unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Zs) ||
		r == '\u3164' || r == '\uFFA0' || r == '\u115F' || r == '\u1160' // Hangul fillers
}

// checkVisible returns an error for the first invisible character of text.
func checkVisible(text string) error {
	for i, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[i:]); size <= 1 {
				return &patternError{offset: i, msg: fmt.Sprintf("the glob %q has a byte that is not UTF-8 at offset %d; expected a glob of visible characters", text, i)}
			}
			continue
		}
		if invisible(r) {
			what := "an invisible character"
			if unicode.IsSpace(r) {
				what = "whitespace"
			}
			return &patternError{offset: i, msg: fmt.Sprintf("the glob %q has %s (%U) at offset %d, so it matches no name as written; expected a glob without whitespace or invisible characters (? matches any one character)", text, what, r, i)}
		}
	}
	return nil
}

// compileGlob compiles one part of a pattern. Parts are compiled without
// separators: the parts themselves are the segments, so `*` in an item part
// crosses the colons of the item.
func compileGlob(whole, part string, at int) (*glob.Pattern, error) {
	g, err := glob.Compile(part)
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			off := at + se.Offset
			return nil, &patternError{offset: off, msg: fmt.Sprintf("the glob %q is invalid (%s at offset %d); expected a glob such as mcp:github:get_*", whole, se.Reason, off)}
		}
		return nil, &patternError{offset: -1, msg: fmt.Sprintf("the glob %q is invalid (%v); expected a glob such as mcp:github:get_*", whole, err)}
	}
	return g, nil
}

// compilePattern compiles one policy glob into its parts.
func compilePattern(text string) (*pattern, error) {
	if err := checkVisible(text); err != nil {
		return nil, err
	}
	p := &pattern{text: text}
	if text == "**" {
		// Every namespace, server and name.
		p.all, p.anyServer, p.item.any = true, true, true
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
		return nil, &patternError{offset: -1, msg: fmt.Sprintf("the glob %q does not start with a namespace; expected mcp:<server>:<tool>, prompt:<server>:<name>, resource:<server>:<uri>, sampling:<server>, or ** for every name", text)}
	}
	p.kind = kind
	restAt := len(ns) + 1
	if kind == KindSampling {
		if rest == "" {
			return nil, &patternError{offset: -1, msg: fmt.Sprintf("the glob %q has an empty server; expected sampling:<server>", text)}
		}
		if cut := topLevelColon(rest); cut >= 0 {
			return nil, &patternError{offset: restAt + cut, msg: fmt.Sprintf("the glob %q has a second ':' at offset %d; expected sampling:<server>, since a sampling request has no name and a server key no colon", text, restAt+cut)}
		}
		if err := p.setServer(text, rest, restAt); err != nil {
			return nil, err
		}
		p.item.any = true
		return p, nil
	}
	if rest == "**" {
		// ns:** is every name of the namespace, as it always was.
		p.anyServer, p.item.any = true, true
		return p, nil
	}
	cut := topLevelColon(rest)
	if cut < 0 {
		return nil, &patternError{offset: -1, msg: fmt.Sprintf("the glob %q has no name part, so it can never match; expected %s:<server>:<name> (%s:*:* is every name of every server, %s:** too; a ':' inside {...} or [...] does not separate)", text, ns, ns, ns)}
	}
	server, item := rest[:cut], rest[cut+1:]
	if server == "" {
		return nil, &patternError{offset: restAt, msg: fmt.Sprintf("the glob %q has an empty server segment, so it can never match; expected %s:<server>:<name>, with * for every server", text, ns)}
	}
	if item == "" {
		return nil, &patternError{offset: restAt + cut + 1, msg: fmt.Sprintf("the glob %q has an empty name part, so it can never match; expected %s:<server>:<name>, with * for every name", text, ns)}
	}
	if err := p.setServer(text, server, restAt); err != nil {
		return nil, err
	}
	itemAt := restAt + cut + 1
	p.itemText = item
	if item == "*" || item == "**" {
		p.item.any = true
		return p, nil
	}
	if lit, ok := unescapeLiteral(item); ok {
		p.item.lit = lit
		return p, nil
	}
	g, err := compileGlob(text, item, itemAt)
	if err != nil {
		return nil, err
	}
	p.item.g = g
	p.item.prefix = literalPrefix(item)
	return p, nil
}

// setServer sets the server part: a literal, any server, or a glob. Server
// keys hold no colon, so `*` and `**` are the same there.
func (p *pattern) setServer(whole, s string, at int) error {
	if s == "*" || s == "**" {
		p.anyServer = true
		return nil
	}
	if lit, ok := unescapeLiteral(s); ok {
		p.serverLit = lit
		return nil
	}
	g, err := compileGlob(whole, s, at)
	if err != nil {
		return err
	}
	p.serverGlob = g
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
	if p.anyServer || p.serverGlob != nil {
		return "", false
	}
	return p.serverLit, true
}

// matchServer matches the server part of a pattern.
func (p *pattern) matchServer(server string) bool {
	switch {
	case p.anyServer:
		return true
	case p.serverGlob != nil:
		return p.serverGlob.Match(server)
	}
	return server == p.serverLit
}

// matchParts matches a pattern against a call's parts; the caller
// guarantees the call's kind.
func (p *pattern) matchParts(server, name string) bool {
	return p.matchServer(server) && p.item.match(name)
}

// matches reports whether the pattern matches a call of the given kind: the
// whole meaning of a pattern, which the index only speeds up.
func (p *pattern) matches(kind Kind, server, name string) bool {
	return (p.all || p.kind == kind) && p.matchParts(server, name)
}
