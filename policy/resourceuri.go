package policy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Resource URIs are decided on in every form an upstream may take them to
// mean, because a deny such as resource:fs:file:///etc/** must not be walked
// around by spelling the same resource differently: file:///tmp/../etc/passwd,
// FILE:///etc//passwd, file:///%65tc/passwd or file:///etc/passwd#x. The
// forms are the URI as sent, its canonical form (canonicalURI) and, for a
// file: URI, its path resolved under each path reading. The most
// restrictive verdict over the forms wins; the request itself is forwarded
// as sent.

// A uriForm is one spelling of a resource URI that a decision looks at.
type uriForm struct {
	uri string
	// how says what the form is, for a decision's reason. It holds no part
	// of the URI: the URI is the upstream's text.
	how string
}

// resourceForms returns the distinct forms of a resource URI, the URI as
// sent first. An error means a file: URI's path cannot be resolved (a
// symlink loop); the caller fails closed.
func resourceForms(uri string) ([]uriForm, error) {
	forms := []uriForm{{uri: uri, how: "as sent"}}
	add := func(u, how string) {
		for _, f := range forms {
			if f.uri == u {
				return
			}
		}
		forms = append(forms, uriForm{uri: u, how: how})
	}
	if err := addURIForms(uri, "", add); err != nil {
		return forms, err
	}
	// URL parsers that follow the WHATWG standard (Node's URL, and so most
	// JavaScript servers) read some URIs otherwise: they drop tabs and
	// newlines anywhere and C0 controls and spaces at the ends, and in a
	// file:, http(s):, ws(s): or ftp: URI take a backslash for a slash, so
	// file:///tmp\..\etc\passwd is /etc/passwd to them.
	if w := whatwgReading(uri); w != uri {
		add(w, "as WHATWG URL parsers (Node) read it")
		if err := addURIForms(w, " as WHATWG URL parsers read it", add); err != nil {
			return forms, err
		}
	}
	return forms, nil
}

// addURIForms adds the canonical form of uri and, for a file: URI, its
// path resolved under each path reading; note ends each form's how.
func addURIForms(uri, note string, add func(u, how string)) error {
	u := parseURI(uri)
	// A path that ends at a segment boundary (/, /. or /..) names a
	// directory, and a deny on dir/** covers it as sent; its canonical and
	// resolved forms, which drop the empty last segment, keep the slash,
	// or file:///tmp/../etc/ would read /etc/ past file:///etc/**.
	dir := endsAsDirectory(percentDecodeAll(u.path))
	canon := u.canonical()
	add(canon, "in its canonical form"+note)
	if dir && !u.hasQuery && !strings.HasSuffix(canon, "/") {
		add(canon+"/", "in its canonical form"+note)
	}
	if !strings.EqualFold(u.scheme, "file") {
		return nil
	}
	// The path a file server opens is the fully percent-decoded path,
	// whatever the authority holds (file://localhost/x, or a host a lenient
	// server ignores).
	paths := []string{percentDecodeAll(u.path)}
	// A server that takes what follows "file://" for the path and decodes
	// it (unquote(uri[7:]), decodeURIComponent of the URI without its
	// scheme: a common hand-written reading) opens the authority too:
	// file://%2Fetc/passwd is /etc/passwd to it, where every URI parser
	// reads the host %2Fetc (or refuses it) and the path /passwd. When that
	// reading names an absolute path, it is decided too.
	// When it names a relative path instead, the file it opens depends on
	// the server's working directory, which the decision does not know,
	// and the URI fails closed (errRelativeFile), whatever the authority
	// looks like: file://..%2F..%2Fetc/passwd (what a URI template
	// file://{path} makes of ../../etc/passwd) as much as
	// file://secrets/key.pem, file://src/../.env or file://~/.ssh/id_rsa,
	// which URI parsers read as a host and such a server as the project's
	// secrets/key.pem, its .env, or a home's key. Only the authority
	// localhost, which file URIs name the local machine with, and a URI
	// template's expression (file://{path}, decided when it is completed)
	// stay decided as the path they are to every other reader: read whole
	// they name a directory no working directory has (localhost, {path}),
	// which the path cannot leave without a ".." segment, which no such
	// URI needs.
	if u.hasAuthority && u.authority != "" {
		if q := percentDecodeAll(u.authority + u.path); filepath.IsAbs(q) {
			paths = append(paths, q)
		} else if a := percentDecodeAll(u.authority); !(strings.EqualFold(a, "localhost") || isTemplateExpression(a)) || hasDotDotSegment(paths[0]) {
			return errRelativeFile
		}
	}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			if p != "" && !u.hasAuthority {
				// file:.env names no absolute path. WHATWG parsers read it
				// as file:///.env (a form of its own: see whatwgReading),
				// but a server that takes the URI's path as it is (Python's
				// urlparse) opens .env in its working directory, which the
				// decision does not know: it cannot be resolved.
				return errRelativeFile
			}
			continue
		}
		how := "as a file path with "
		if i > 0 {
			how = "as a file path, its authority and path decoded together, with "
		}
		for r := range reading(numReadings) {
			if r.fold() {
				continue // resolved as by the reading without folding
			}
			resolved, err := resolvePath(p, r, nil)
			if err != nil {
				return fmt.Errorf("the file path of the resource URI cannot be resolved: %w", err)
			}
			add("file://"+resolved, how+r.String()+note)
			if dir && !strings.HasSuffix(resolved, "/") {
				add("file://"+resolved+"/", how+r.String()+note)
			}
		}
	}
	return nil
}

// whatwgReading returns uri as a WHATWG URL parser reads it before it
// splits it: without C0 controls and spaces at either end, without any
// tab, LF or CR, and, for the special schemes, with every backslash before
// the query or fragment taken for a slash; a file: URL without a slash
// after the scheme gets an empty host and an absolute path.
func whatwgReading(uri string) string {
	s := strings.TrimFunc(uri, func(r rune) bool { return r <= 0x20 })
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	i := strings.IndexByte(s, ':')
	if i <= 0 || !validScheme(s[:i]) {
		return s
	}
	switch strings.ToLower(s[:i]) {
	case "file", "http", "https", "ws", "wss", "ftp":
	default:
		return s
	}
	end := strings.IndexAny(s, "?#")
	if end < 0 {
		end = len(s)
	}
	s = strings.ReplaceAll(s[:end], "\\", "/") + s[end:]
	if strings.EqualFold(s[:i], "file") && !strings.HasPrefix(s[i+1:], "/") {
		// A file: URL's path is always absolute there, with an empty
		// host: file:etc/passwd is file:///etc/passwd.
		s = s[:i+1] + "///" + s[i+1:]
	}
	return s
}

// isTemplateExpression reports whether s is one RFC 6570 expression,
// {name} or {+name}: the authority of a template such as file://{path}.
func isTemplateExpression(s string) bool {
	return len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' && !strings.ContainsAny(s[1:len(s)-1], "{}/\\.")
}

// hasDotDotSegment reports whether a decoded path has a ".." segment,
// with a slash or a backslash for a separator.
func hasDotDotSegment(p string) bool {
	for seg := range strings.FieldsFuncSeq(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return true
		}
	}
	return false
}

// endsAsDirectory reports whether a path ends at a segment boundary: with
// a slash, or with a . or .. segment.
func endsAsDirectory(p string) bool {
	return strings.HasSuffix(p, "/") || p == "." || p == ".." ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// uriParts are the five components of a URI reference (RFC 3986, section
// 3), split the way the appendix B expression splits them.
type uriParts struct {
	scheme       string
	hasAuthority bool
	authority    string
	path         string
	hasQuery     bool
	query        string
}

// parseURI splits any string into the components of a URI reference. It
// never fails: a string that is not a URI is a relative reference whose
// path is the whole string (up to ? or #). The fragment is dropped: it is
// never sent to the server that holds the resource.
func parseURI(s string) uriParts {
	var u uriParts
	s, _, _ = strings.Cut(s, "#")
	if i := strings.IndexAny(s, ":/?"); i > 0 && s[i] == ':' && validScheme(s[:i]) {
		u.scheme, s = s[:i], s[i+1:]
	}
	if rest, ok := strings.CutPrefix(s, "//"); ok {
		u.hasAuthority = true
		i := strings.IndexAny(rest, "/?")
		if i < 0 {
			i = len(rest)
		}
		u.authority, s = rest[:i], rest[i:]
	}
	u.path, u.query, u.hasQuery = strings.Cut(s, "?")
	return u
}

// validScheme reports whether s is ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// canonicalURI returns the canonical form of a URI: scheme and host in
// lower case, percent-encodings of unreserved characters decoded and the
// others in upper case (a % that starts no encoding becomes %25), no `.`,
// `..` or empty path segments, no fragment; the query is kept. It is
// idempotent, and two spellings RFC 3986 (section 6.2.2) calls equivalent
// have the same form. Empty segments are removed too, because a file
// server opens /etc//passwd as /etc/passwd.
func canonicalURI(s string) string { return parseURI(s).canonical() }

func (u uriParts) canonical() string {
	var b strings.Builder
	if u.scheme != "" {
		b.WriteString(strings.ToLower(u.scheme))
		b.WriteByte(':')
	}
	if u.hasAuthority {
		b.WriteString("//")
		userinfo, host, ok := cutLast(u.authority, "@")
		if ok {
			b.WriteString(normalisePercent(userinfo, false))
			b.WriteByte('@')
		} else {
			host = u.authority
		}
		b.WriteString(normalisePercent(host, true))
	}
	b.WriteString(u.canonicalPath())
	if u.hasQuery {
		b.WriteByte('?')
		b.WriteString(normalisePercent(u.query, false))
	}
	return b.String()
}

// canonicalPath removes the dot and empty segments of the path after its
// percent-encodings are normalised, so that %2E%2E counts as `..`. A `..`
// above the first segment is dropped, as RFC 3986's remove_dot_segments
// drops it.
func (u uriParts) canonicalPath() string {
	p := normalisePercent(u.path, false)
	rooted := strings.HasPrefix(p, "/")
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, seg)
		}
	}
	if !rooted && u.scheme == "" && !u.hasAuthority && len(segs) > 0 {
		// A first segment with a colon would read as a scheme the next
		// time; RFC 3986 (section 4.2) encodes that colon.
		segs[0] = strings.ReplaceAll(segs[0], ":", "%3A")
	}
	out := strings.Join(segs, "/")
	if rooted || (u.hasAuthority && out != "") {
		// Under an authority a path is empty or starts with /.
		out = "/" + out
	}
	return out
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// normalisePercent decodes the percent-encodings of unreserved characters,
// writes the others with upper-case hex digits and encodes a % that starts
// no encoding as %25. With lower, ASCII letters outside encodings are put
// in lower case (for a host).
func normalisePercent(s string, lower bool) string {
	if !strings.ContainsRune(s, '%') && (!lower || s == strings.ToLower(s)) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if lower && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			b.WriteString("%25")
			continue
		}
		d := unhex(s[i+1])<<4 | unhex(s[i+2])
		i += 2
		if unreserved(d) {
			if lower && 'A' <= d && d <= 'Z' {
				d += 'a' - 'A'
			}
			b.WriteByte(d)
			continue
		}
		const hexDigits = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hexDigits[d>>4])
		b.WriteByte(hexDigits[d&15])
	}
	return b.String()
}

// percentDecodeAll decodes every valid percent-encoding, reserved
// characters included, as a file server turns a file: URI into a path; a %
// that starts no encoding stays.
func percentDecodeAll(s string) string {
	if !strings.ContainsRune(s, '%') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unreserved reports whether c is ALPHA / DIGIT / "-" / "." / "_" / "~".
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
