package policy

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gobwas/glob"
	"go.yaml.in/yaml/v3"

	"github.com/mcp-gate/mcp-gate/naming"
)

// Options tune what Parse checks beyond the file itself.
type Options struct {
	// KnownServers are the server keys of this machine's servers file. A
	// glob naming a literal server that is not among them is a warning (not
	// an error: one policy often serves many machines). Nil means "don't
	// check".
	KnownServers []string
	// Catalog holds, for the servers that were started to learn them
	// (`mcp-gate check --strict`), the names each one lists. A glob whose
	// name part matches none of the listed names of the servers it covers
	// is a warning naming the nearest listed name. A server absent from the
	// catalog (it did not start) is not checked.
	Catalog map[string]ServerNames
}

// ServerNames are the names one server lists.
type ServerNames struct {
	Tools   []string
	Prompts []string
}

const (
	defaultApprovalTimeout = 2 * time.Minute
	minApprovalTimeout     = time.Second
	maxApprovalTimeout     = time.Hour
)

// LoadFile reads and parses a policy file.
func LoadFile(path string, opts Options) (*Policy, []Warning, error) {
	data, err := readFileLimited(path)
	if err != nil {
		return nil, nil, err
	}
	return Parse(path, data, opts)
}

// readFileLimited reads a file of at most maxYAMLBytes.
func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	// One byte past the bound is enough for the parser to report the size.
	if _, err := buf.ReadFrom(io.LimitReader(f, maxYAMLBytes+1)); err != nil {
		return nil, fmt.Errorf("reading the policy %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// Parse reads a policy file's bytes. filename is used in positions and as
// the policy's Source. The error, a *ParseError, lists every problem of the
// file; the warnings are worth showing even when the policy is valid.
func Parse(filename string, data []byte, opts Options) (*Policy, []Warning, error) {
	ps := &problems{file: filename}
	p := parseInto(ps, data, opts)
	if err := ps.err(); err != nil {
		return nil, ps.warnings, err
	}
	p.source = filename
	p.warnings = ps.warnings
	return p, ps.warnings, nil
}

// revisionOf names a file's content: the same bytes, the same revision.
func revisionOf(data []byte) string { return revisionOfSum(sha256.Sum256(data)) }

// revisionOfSum is revisionOf for content whose SHA-256 is already known.
func revisionOfSum(sum [sha256.Size]byte) string {
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// parser holds the state of one parse.
type parser struct {
	ps    *problems
	data  []byte
	opts  Options
	known map[string]bool
	names map[string]int // rule name -> line of first use
	rules []*rule
	// pos orders the rules by where they stand in the file.
	pos map[*rule][2]int
}

func parseInto(ps *problems, data []byte, opts Options) *Policy {
	root := readDocument(ps, data, "a policy: a mapping with version and fallback")
	if root == nil {
		return nil
	}
	pr := &parser{ps: ps, data: data, opts: opts, names: map[string]int{}, pos: map[*rule][2]int{}}
	if opts.KnownServers != nil {
		pr.known = make(map[string]bool, len(opts.KnownServers))
		for _, s := range opts.KnownServers {
			pr.known[s] = true
		}
	}
	pol := &Policy{revision: revisionOf(data), timeout: defaultApprovalTimeout}
	fs := fields(ps, root, "the policy", "version", "fallback", "approval", "deny", "ask", "allow", "rules", "guard", "pins")

	if f, ok := fs["version"]; !ok {
		ps.errorf(root.Line, root.Column, "the policy has no version; expected version: 1")
	} else if v := f.value; v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Value != "1" {
		ps.errorf(v.Line, v.Column, "version is %s; expected 1, the only version this mcp-gate reads", describe(v))
	}

	if f, ok := fs["fallback"]; !ok {
		ps.errorf(root.Line, root.Column, "the policy has no fallback; expected fallback: ask or fallback: deny, chosen on purpose (it is what a tool call that no rule matches gets)")
	} else if s, ok := str(ps, f.value, "fallback"); ok {
		switch s {
		case "ask":
			pol.fallback = Ask
		case "deny":
			pol.fallback = Deny
		case "allow":
			ps.errorf(f.value.Line, f.value.Column, `fallback is "allow"; expected ask or deny: a policy never allows what it does not name, so list what you allow instead, e.g. allow: ["mcp:*:*"]`)
		default:
			ps.errorf(f.value.Line, f.value.Column, "fallback is %q; expected ask or deny", s)
		}
	}

	if f, ok := fs["approval"]; ok {
		pol.timeout = pr.approval(f.value, pol)
	}
	for _, list := range []struct {
		key string
		v   Verdict
	}{{"deny", Deny}, {"ask", Ask}, {"allow", Allow}} {
		if f, ok := fs[list.key]; ok {
			pr.list(list.key, list.v, f.value)
		}
	}
	if f, ok := fs["rules"]; ok {
		pr.ruleList(f.value)
	}
	if f, ok := fs["guard"]; ok {
		pol.logOnly = pr.guard(f.value)
	}
	if f, ok := fs["pins"]; ok {
		pol.pins = pr.pinsSection(f.value)
	}
	if len(ps.errs) > 0 {
		return nil
	}
	// Rules are numbered in the order they stand in the file, whichever
	// key holds them: the first of the winning level explains a decision.
	slices.SortStableFunc(pr.rules, func(a, b *rule) int {
		pa, pb := pr.pos[a], pr.pos[b]
		return cmp.Or(cmp.Compare(pa[0], pb[0]), cmp.Compare(pa[1], pb[1]))
	})
	for i, r := range pr.rules {
		r.seq = i
	}
	pol.rules = pr.rules
	pol.build(maxMerged)
	return pol
}

func (pr *parser) approval(n *yaml.Node, pol *Policy) time.Duration {
	ps := pr.ps
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "approval is %s; expected a mapping such as {timeout: 2m}", describe(n))
		return defaultApprovalTimeout
	}
	fs := fields(ps, n, "approval", "timeout", "via", "hosts")
	pr.approvalChannels(fs, pol) // via.go
	f, ok := fs["timeout"]
	if !ok {
		return defaultApprovalTimeout
	}
	s, ok := str(ps, f.value, "approval.timeout")
	if !ok {
		return defaultApprovalTimeout
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		ps.errorf(f.value.Line, f.value.Column, "approval.timeout is %q; expected a duration such as 90s or 2m", s)
		return defaultApprovalTimeout
	}
	if d < minApprovalTimeout || d > maxApprovalTimeout {
		ps.errorf(f.value.Line, f.value.Column, "approval.timeout is %s; expected a duration from %s to %s", d, minApprovalTimeout, time.Duration(maxApprovalTimeout))
		return defaultApprovalTimeout
	}
	return d
}

// list reads one of deny, ask and allow: rules without conditions, named
// after their position.
func (pr *parser) list(key string, v Verdict, n *yaml.Node) {
	items, _ := strList(pr.ps, n, key)
	for _, it := range items {
		// Each item is its own rule, so that a decision names the very line.
		r := &rule{name: fmt.Sprintf("%s[%d]", key, it.index), action: v}
		pr.pos[r] = [2]int{it.node.Line, it.node.Column}
		if p := pr.pattern(r, it.node); p != nil {
			r.pats = append(r.pats, p)
			pr.rules = append(pr.rules, r)
		}
	}
}

func (pr *parser) ruleList(n *yaml.Node) {
	ps := pr.ps
	if n.Kind != yaml.SequenceNode {
		ps.errorf(n.Line, n.Column, "rules is %s; expected a list of rules, each a mapping with match and action", describe(n))
		return
	}
	// Generated names first, so that a name given later cannot take one.
	for i := range n.Content {
		pr.names[fmt.Sprintf("rules[%d]", i)] = 0
	}
	for i, item := range n.Content {
		pr.rule(i, item)
	}
}

func (pr *parser) rule(i int, n *yaml.Node) {
	ps := pr.ps
	where := fmt.Sprintf("rules[%d]", i)
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "%s is %s; expected a mapping with match and action", where, describe(n))
		return
	}
	fs := fields(ps, n, where, "name", "match", "when", "action", "reason", "via")
	r := &rule{name: where}
	pr.pos[r] = [2]int{n.Line, n.Column}
	ok := true
	if f, has := fs["name"]; has {
		if s, good := str(ps, f.value, where+".name"); good {
			switch {
			case s == "":
				ps.errorf(f.value.Line, f.value.Column, "%s.name is empty; expected a name, or no name key for the default %q", where, where)
				ok = false
			case s == "fallback" || s == "default":
				ps.errorf(f.value.Line, f.value.Column, "%s.name is %q; expected another name: %q names decisions that no rule made", where, s, s)
				ok = false
			case isGeneratedName(s) && s != where:
				ps.errorf(f.value.Line, f.value.Column, "%s.name is %q; expected a name that is not of the form deny[i], ask[i], allow[i] or rules[i], which name rules by position", where, s)
				ok = false
			default:
				if line, dup := pr.names[s]; dup && s != where {
					ps.errorf(f.value.Line, f.value.Column, "%s.name %q is already the name of the rule at line %d; expected unique names", where, s, line+ps.lineOff)
					ok = false
				}
				r.name = s
				pr.names[s] = f.value.Line
			}
		} else {
			ok = false
		}
	}
	if f, has := fs["action"]; !has {
		ps.errorf(n.Line, n.Column, "%s has no action; expected action: allow, ask or deny", where)
		ok = false
	} else if s, good := str(ps, f.value, where+".action"); good {
		v, err := ParseVerdict(s)
		if err != nil {
			ps.errorf(f.value.Line, f.value.Column, "%s.action is %q; expected allow, ask or deny", where, s)
			ok = false
		}
		r.action = v
	} else {
		ok = false
	}
	if f, has := fs["reason"]; has {
		if s, good := str(ps, f.value, where+".reason"); good {
			r.reason = strings.TrimSpace(s)
		} else {
			ok = false
		}
	}
	if f, has := fs["via"]; has {
		if r.via = pr.via(f.value, where+".via"); r.via == nil {
			ok = false
		} else if r.action != Ask {
			ps.errorf(f.value.Line, f.value.Column, "%s has via, but its action is %s; expected via only on a rule whose action is ask: it chooses how the human is asked", where, r.action)
			ok = false
		}
	}
	if f, has := fs["when"]; has {
		if s, good := str(ps, f.value, where+".when"); good {
			r.when = pr.condition(where, f.value, s)
			if r.when == nil {
				ok = false
			}
		} else {
			ok = false
		}
	}
	f, has := fs["match"]
	if !has {
		ps.errorf(n.Line, n.Column, "%s has no match; expected match: a non-empty list of globs such as [mcp:github:create_*]", where)
		return
	}
	items, good := strList(ps, f.value, where+".match")
	if good && len(items) == 0 {
		ps.errorf(f.value.Line, f.value.Column, "%s.match is an empty list; expected at least one glob, since a rule that matches nothing is a mistake", where)
		return
	}
	for _, it := range items {
		if p := pr.pattern(r, it.node); p != nil {
			r.pats = append(r.pats, p)
		} else {
			ok = false
		}
	}
	if ok && good {
		pr.rules = append(pr.rules, r)
	}
}

// isGeneratedName reports whether s has the form of a name the parser gives.
func isGeneratedName(s string) bool {
	for _, p := range []string{"deny[", "ask[", "allow[", "rules["} {
		if strings.HasPrefix(s, p) && strings.HasSuffix(s, "]") {
			return true
		}
	}
	return false
}

// scalarCol returns the column where a scalar's text starts, past an
// opening quote.
func scalarCol(n *yaml.Node) int {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		return n.Column + 1
	}
	return n.Column
}

// valuePos returns the file position of the byte at offset off of a
// scalar's value. Plain and single-quoted scalars on one line map column for
// column (a doubled ” counts once); a double-quoted one is walked escape by
// escape; a block or multi-line scalar falls back to where it starts.
func (pr *parser) valuePos(n *yaml.Node, off int) (int, int) {
	start := scalarCol(n)
	v := n.Value
	if off > len(v) || strings.Contains(v, "\n") || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Line, start
	}
	src := lineOf(pr.data, n.Line)
	// Columns count runes; find the byte where the value starts.
	i, col := 0, 1
	for i < len(src) && col < start {
		_, size := utf8.DecodeRuneInString(src[i:])
		i += size
		col++
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		if !strings.HasPrefix(src[i:], v[:off]) {
			// A plain scalar folded over lines: the text before the
			// offset is not all on the first line.
			return n.Line, start
		}
		return n.Line, start + utf8.RuneCountInString(v[:off])
	}
	vi := 0
	for vi < off && i < len(src) {
		c := src[i]
		switch {
		case n.Style&yaml.SingleQuotedStyle != 0 && c == '\'' && i+1 < len(src) && src[i+1] == '\'':
			i += 2
			vi++
			col += 2
		case n.Style&yaml.DoubleQuotedStyle != 0 && c == '\\' && i+1 < len(src):
			// Escapes are ASCII: one column a byte.
			width, produced := escapeWidth(src[i+1:])
			i += 1 + width
			vi += produced
			col += 1 + width
		default:
			_, size := utf8.DecodeRuneInString(src[i:])
			i += size
			vi += size
			col++
		}
	}
	if vi < off {
		return n.Line, start // a quoted scalar over several lines
	}
	return n.Line, col
}

// escapeWidth returns how many source bytes follow the backslash of a YAML
// double-quoted escape and how many bytes of value it produces.
func escapeWidth(s string) (int, int) {
	hex := 0
	switch s[0] {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case 'N', '_':
		return 1, 3 // U+0085, U+00A0: two bytes; close enough for a column
	case 'L', 'P':
		return 1, 3
	default:
		return 1, 1
	}
	if len(s) < 1+hex {
		return len(s), 1
	}
	r, err := strconv.ParseUint(s[1:1+hex], 16, 32)
	if err != nil {
		return 1 + hex, 1
	}
	return 1 + hex, max(1, utf8.RuneLen(rune(r)))
}

// lineOf returns a 1-based line of data, without its newline.
func lineOf(data []byte, line int) string {
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return ""
		}
		data = data[i+1:]
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	return string(data)
}

// errorPos returns where a glob's error points: the offending byte of the
// scalar for a patternError with an offset, else the scalar's start.
func (pr *parser) errorPos(n *yaml.Node, err error) (int, int) {
	if pe, ok := err.(*patternError); ok && pe.offset >= 0 {
		return pr.valuePos(n, pe.offset)
	}
	return n.Line, scalarCol(n)
}

// pattern compiles one glob of a rule and checks that the rule can use it.
func (pr *parser) pattern(r *rule, n *yaml.Node) *pattern {
	ps := pr.ps
	p, err := compilePattern(n.Value)
	if err != nil {
		line, col := pr.errorPos(n, err)
		ps.errorf(line, col, "%s", err.Error())
		return nil
	}
	if !p.all && (p.kind == KindPrompt || p.kind == KindResource) {
		switch {
		case r.action == Ask:
			ps.errorf(n.Line, n.Column, "the ask rule %s matches %q, a %s name; expected only deny or allow for prompts and resources: they are governed only by deny, because the gate has no approval flow for them and allows what no deny covers", r.name, p.text, p.kind.name())
			return nil
		case r.when != nil:
			ps.errorf(n.Line, n.Column, "the conditional rule %s matches %q, a %s name; expected no condition on prompts and resources: they are governed only by unconditional deny, which also hides them from lists", r.name, p.text, p.kind.name())
			return nil
		case r.action == Allow:
			ps.warnf(n.Line, n.Column, "the allow rule %s matches %q, which changes nothing: %ss are allowed unless a deny covers them", r.name, p.text, p.kind.name())
		}
	}
	if server, ok := p.literalServer(); ok && !naming.IsServerKey(server) {
		ps.warnf(n.Line, n.Column, "the glob %q names the server %q, which is not a server key (^[a-z0-9][a-z0-9-]*$), so the glob can never match%s", p.text, server, nearestHint(server, pr.opts.KnownServers))
	} else if ok && pr.known != nil && !pr.known[server] {
		ps.warnf(n.Line, n.Column, "the glob %q names the server %q, which the servers file does not list%s; the rule applies only where that server exists", p.text, server, nearestHint(server, pr.opts.KnownServers))
	} else {
		pr.checkCatalog(p, n)
	}
	return p
}

// checkCatalog warns about a glob whose name part matches no name that the
// servers it covers list: a rule that can never apply on this machine, most
// often a typo or a tool the server renamed.
func (pr *parser) checkCatalog(p *pattern, n *yaml.Node) {
	if len(pr.opts.Catalog) == 0 || p.all || p.item.any {
		return
	}
	var noun string
	list := func(sn ServerNames) []string { return sn.Tools }
	switch p.kind {
	case KindTool:
		noun = "tool"
	case KindPrompt:
		noun, list = "prompt", func(sn ServerNames) []string { return sn.Prompts }
	default:
		return // resource URIs are not listed in full; sampling has no name
	}
	for _, server := range pr.opts.KnownServers {
		if _, listed := pr.opts.Catalog[server]; !listed && p.matchServer(server) {
			return // a server the glob covers did not tell its names
		}
	}
	var covered, names []string
	for _, server := range slices.Sorted(maps.Keys(pr.opts.Catalog)) {
		if !p.matchServer(server) {
			continue
		}
		covered = append(covered, server)
		for _, name := range list(pr.opts.Catalog[server]) {
			if p.item.match(name) {
				return
			}
			names = append(names, name)
		}
	}
	if len(covered) == 0 {
		return
	}
	which := fmt.Sprintf("the server %q lists", covered[0])
	if len(covered) > 1 {
		which = fmt.Sprintf("the servers %s list", quoteAll(covered))
	}
	ps := pr.ps
	ps.warnf(n.Line, n.Column, "the glob %q matches no %s that %s%s; the rule never applies to them", p.text, noun, which, nearestHint(p.itemText, names))
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// nearestHint returns `, did you mean "x"?` for the candidate nearest to s
// by edit distance, or "" when there is none.
func nearestHint(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return ""
	}
	return fmt.Sprintf(" (the nearest is %q)", best)
}

// maxEditLen bounds the strings editDistance compares in full, so that a
// long hostile name costs no more than a short one.
const maxEditLen = 128

// editDistance is the Levenshtein distance between a and b over runes,
// each cut at maxEditLen runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxEditLen {
		ra = ra[:maxEditLen]
	}
	if len(rb) > maxEditLen {
		rb = rb[:maxEditLen]
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func (k Kind) name() string {
	switch k {
	case KindTool:
		return "tool"
	case KindPrompt:
		return "prompt"
	case KindResource:
		return "resource"
	case KindSampling:
		return "sampling"
	}
	return k.String()
}

// condition compiles a rule's `when`, reporting CEL's problems at their
// place in the file when the expression's text maps onto it.
func (pr *parser) condition(where string, n *yaml.Node, text string) *condition {
	ps := pr.ps
	if strings.TrimSpace(text) == "" {
		ps.errorf(n.Line, n.Column, "%s.when is empty; expected a CEL expression over args, server and tool, or no when key", where)
		return nil
	}
	c, always, cps := compileCondition(text)
	for _, cp := range cps {
		line, col := n.Line, n.Column
		switch {
		case cp.line == 0:
		case n.Style&(yaml.LiteralStyle) != 0:
			// A literal block starts on the line after its indicator, at
			// the block's indentation.
			line = n.Line + cp.line
			col = blockIndent(pr.data, n.Line+1) + cp.col
		case !strings.Contains(text, "\n") && n.Style&yaml.FoldedStyle == 0:
			col = scalarCol(n) + cp.col - 1
		}
		ps.errorf(line, col, "%s.when: %s", where, cp.msg)
	}
	if c != nil && always {
		ps.warnf(n.Line, n.Column, "%s.when reads no variable and is always true; drop when to say the rule is unconditional", where)
	}
	return c
}

// indentOf returns the number of leading spaces of a 1-based line of data.
func indentOf(data []byte, line int) int {
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return 0
		}
		data = data[i+1:]
	}
	n := 0
	for n < len(data) && data[n] == ' ' {
		n++
	}
	return n
}

func (pr *parser) guard(n *yaml.Node) []*glob.Pattern {
	ps := pr.ps
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "guard is %s; expected a mapping such as {log_only: [legacy-server]}", describe(n))
		return nil
	}
	fs := fields(ps, n, "guard", "log_only")
	f, ok := fs["log_only"]
	if !ok {
		return nil
	}
	items, _ := strList(ps, f.value, "guard.log_only")
	var out []*glob.Pattern
	for _, it := range items {
		item := it.node
		if err := checkVisible(item.Value); err != nil {
			line, col := pr.errorPos(item, err)
			ps.errorf(line, col, "guard.log_only: %v", err)
			continue
		}
		if item.Value == "" || strings.Contains(item.Value, ":") {
			ps.errorf(item.Line, item.Column, "guard.log_only has %q; expected a server key or a glob over server keys, such as legacy-server or legacy-*", item.Value)
			continue
		}
		g, err := glob.Compile(item.Value)
		if err != nil {
			ps.errorf(item.Line, item.Column, "guard.log_only has the invalid glob %q (%v); expected a server key or a glob over server keys", item.Value, err)
			continue
		}
		if literal(item.Value) && pr.known != nil && !pr.known[item.Value] {
			ps.warnf(item.Line, item.Column, "guard.log_only names the server %q, which the servers file does not list%s", item.Value, nearestHint(item.Value, pr.opts.KnownServers))
		}
		out = append(out, g)
	}
	return out
}
