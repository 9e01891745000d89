package policy

import (
	"strings"

	"github.com/gobwas/glob"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// A file: URI names a file, and on a case-insensitive file system (macOS,
// Windows) file:///private/ETC/passwd is /private/etc/passwd. So a
// resource deny is also matched regardless of case against the forms of a
// file: URI: the pattern's name part and the form are both folded (Unicode
// simple folding) and compared. Only denies decide resources, so this can
// only refuse more.

// foldedDeny is an unconditional resource deny with its name part folded.
type foldedDeny struct {
	e    *entry
	item itemMatcher
}

// addFoldedDeny records e, an unconditional deny that applies to
// resources, with its name part folded. A name part that no longer
// compiles once folded (a class range such as [Z-a]) is matched as
// written only.
func (p *Policy) addFoldedDeny(e *entry) {
	pat := e.pat
	var m itemMatcher
	switch {
	case pat.item.any:
		m.any = true
	default:
		text := rawjson.FoldKey(pat.itemText)
		if lit, ok := unescapeLiteral(text); ok {
			m.lit = lit
			break
		}
		g, err := glob.Compile(text)
		if err != nil {
			return
		}
		m.g, m.prefix = g, literalPrefix(text)
	}
	p.foldedDenies = append(p.foldedDenies, foldedDeny{e: e, item: m})
}

// foldedDenyOf returns the first deny, in the file's order, that matches a
// file: form of a resource URI regardless of case, or nil. The scheme is
// that of each form, not of the URI as sent: " file:///ETC/passwd" or
// "fi\tle:///ETC/passwd" is a file: URI to a WHATWG parser.
func (p *Policy) foldedDenyOf(server string, forms []uriForm) *entry {
	if len(p.foldedDenies) == 0 {
		return nil
	}
	var best *entry
	for _, f := range forms {
		if !strings.EqualFold(parseURI(f.uri).scheme, "file") {
			continue
		}
		u := rawjson.FoldKey(f.uri)
		for _, fd := range p.foldedDenies {
			if (best == nil || fd.e.seq < best.seq) && fd.e.pat.matchServer(server) && fd.item.match(u) {
				best = fd.e
			}
		}
	}
	return best
}
