package policy

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gobwas/glob"
	"go.yaml.in/yaml/v3"
)

// Options tune what Parse checks beyond the file itself.
type Options struct {
	// KnownServers are the server keys of this machine's servers file. A
	// glob naming a literal server that is not among them is a warning (not
	// an error: one policy often serves many machines). Nil means "don't
	// check".
	KnownServers []string
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
func revisionOf(data []byte) string {
	sum := sha256.Sum256(data)
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
	fs := fields(ps, root, "the policy", "version", "fallback", "approval", "deny", "ask", "allow", "rules", "guard")

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
		pol.timeout = pr.approval(f.value)
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

func (pr *parser) approval(n *yaml.Node) time.Duration {
	ps := pr.ps
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "approval is %s; expected a mapping such as {timeout: 2m}", describe(n))
		return defaultApprovalTimeout
	}
	fs := fields(ps, n, "approval", "timeout")
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
	fs := fields(ps, n, where, "name", "match", "when", "action", "reason")
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

// pattern compiles one glob of a rule and checks that the rule can use it.
func (pr *parser) pattern(r *rule, n *yaml.Node) *pattern {
	ps := pr.ps
	p, err := compilePattern(n.Value)
	if err != nil {
		col := n.Column
		if pe, ok := err.(*patternError); ok && pe.offset > 0 && !strings.Contains(n.Value, "\n") && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			col = scalarCol(n) + pe.offset
		}
		ps.errorf(n.Line, col, "%s", err.Error())
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
	if server, ok := p.literalServer(); ok && pr.known != nil && !pr.known[server] {
		ps.warnf(n.Line, n.Column, "the glob %q names the server %q, which the servers file does not list; the rule applies only where that server exists", p.text, server)
	}
	return p
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
			ps.warnf(item.Line, item.Column, "guard.log_only names the server %q, which the servers file does not list", item.Value)
		}
		out = append(out, g)
	}
	return out
}
