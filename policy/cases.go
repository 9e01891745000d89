package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CaseFile is a file of policy test cases: calls with the verdict each must
// get. The project's own tests carry their policy inline; a user's file has
// none and runs against the policy given to `mcp-gate check --tests`.
//
//	policy: |             # optional inline policy
//	  version: 1
//	  fallback: deny
//	  deny: [mcp:github:delete_*]
//	cases:
//	  - name: delete is denied          # optional; default cases[i]
//	    tool: mcp:github:delete_repo    # or prompt:s:p, resource:s:uri, sampling:s
//	    args: {owner: me}               # optional: YAML, sent as JSON
//	    want: deny                      # allow | ask | deny
//	    rule: deny[0]                   # optional: the deciding rule
//	    reason_contains: deny[0]        # optional: a piece of the reason
//
// args_json may replace args to give the raw JSON text, e.g. to test
// arguments that are not an object.
type CaseFile struct {
	File  string
	Cases []Case

	policy       string
	hasPolicy    bool
	policyLine   int // the file line of the inline policy's first line, minus one
	policyIndent int
}

// Case is one call and what the policy must decide about it.
type Case struct {
	Name string
	Pos  string // "file:line:col" of the case
	Call Call
	Want Verdict
	// Rule, when not empty, is the rule that must decide.
	Rule string
	// ReasonContains, when not empty, must be part of the reason.
	ReasonContains string
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Case Case
	Got  Decision
	Pass bool
	// Msg says what was got against what was wanted.
	Msg string
}

// String returns "pos: PASS name" or "pos: FAIL name: message".
func (r CaseResult) String() string {
	if r.Pass {
		return fmt.Sprintf("%s: PASS %s", r.Case.Pos, r.Case.Name)
	}
	return fmt.Sprintf("%s: FAIL %s: %s", r.Case.Pos, r.Case.Name, r.Msg)
}

// ParseCases reads a case file strictly: unknown keys, wrong types, unknown
// verdicts and malformed names are errors, all of them reported at once as
// a *ParseError.
func ParseCases(filename string, data []byte) (*CaseFile, error) {
	ps := &problems{file: filename}
	root := readDocument(ps, data, "a case file: a mapping with cases (and optionally policy)")
	if root == nil {
		return nil, ps.err()
	}
	cf := &CaseFile{File: filename}
	fs := fields(ps, root, "the case file", "policy", "cases")
	if f, ok := fs["policy"]; ok {
		if s, ok := str(ps, f.value, "policy"); ok {
			cf.policy, cf.hasPolicy = s, true
			if f.value.Style&yaml.LiteralStyle != 0 {
				cf.policyLine = f.value.Line
				cf.policyIndent = blockIndent(data, f.value.Line+1)
			} else {
				// The text does not map line for line onto the file;
				// problems are reported from the key's line on.
				cf.policyLine = f.value.Line - 1
			}
		}
	}
	f, ok := fs["cases"]
	switch {
	case !ok:
		ps.errorf(root.Line, root.Column, "the case file has no cases; expected cases: a list of {tool, want}")
	case f.value.Kind != yaml.SequenceNode:
		ps.errorf(f.value.Line, f.value.Column, "cases is %s; expected a list of {tool, want}", describe(f.value))
	case len(f.value.Content) == 0:
		ps.errorf(f.value.Line, f.value.Column, "cases is an empty list; expected at least one case, since a test that checks nothing cannot fail")
	default:
		for i, n := range f.value.Content {
			if c, ok := parseCase(ps, i, n); ok {
				cf.Cases = append(cf.Cases, c)
			}
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return cf, nil
}

// blockIndent returns the indentation of the first non-blank line from a
// 1-based line on: the indentation of a literal block's content.
func blockIndent(data []byte, line int) int {
	lines := strings.Split(string(data), "\n")
	for l := line - 1; l >= 0 && l < len(lines); l++ {
		if t := strings.TrimLeft(lines[l], " "); strings.TrimSpace(t) != "" {
			return len(lines[l]) - len(t)
		}
	}
	return 0
}

func parseCase(ps *problems, i int, n *yaml.Node) (Case, bool) {
	where := fmt.Sprintf("cases[%d]", i)
	c := Case{Name: where, Pos: (&Problem{File: ps.file, Line: n.Line, Col: n.Column}).Pos()}
	if n.Kind != yaml.MappingNode {
		ps.errorf(n.Line, n.Column, "%s is %s; expected a mapping with tool and want", where, describe(n))
		return c, false
	}
	fs := fields(ps, n, where, "name", "tool", "args", "args_json", "want", "rule", "reason_contains")
	ok := true
	if f, has := fs["name"]; has {
		if s, good := str(ps, f.value, where+".name"); good {
			c.Name = s
		} else {
			ok = false
		}
	}
	if f, has := fs["tool"]; !has {
		ps.errorf(n.Line, n.Column, "%s has no tool; expected tool: a policy name such as mcp:github:create_issue", where)
		ok = false
	} else if s, good := str(ps, f.value, where+".tool"); good {
		call, err := ParseName(s)
		if err != nil {
			ps.errorf(f.value.Line, f.value.Column, "%s.tool: %v", where, err)
			ok = false
		}
		c.Call = call
	} else {
		ok = false
	}
	if f, has := fs["want"]; !has {
		ps.errorf(n.Line, n.Column, "%s has no want; expected want: allow, ask or deny", where)
		ok = false
	} else if s, good := str(ps, f.value, where+".want"); good {
		v, err := ParseVerdict(s)
		if err != nil {
			ps.errorf(f.value.Line, f.value.Column, "%s.want is %q; expected allow, ask or deny", where, s)
			ok = false
		}
		c.Want = v
	} else {
		ok = false
	}
	if f, has := fs["rule"]; has {
		if s, good := str(ps, f.value, where+".rule"); good && s != "" {
			c.Rule = s
		} else if good {
			ps.errorf(f.value.Line, f.value.Column, "%s.rule is empty; expected a rule name, or no rule key", where)
			ok = false
		} else {
			ok = false
		}
	}
	if f, has := fs["reason_contains"]; has {
		if s, good := str(ps, f.value, where+".reason_contains"); good {
			c.ReasonContains = s
		} else {
			ok = false
		}
	}
	a, hasArgs := fs["args"]
	aj, hasJSON := fs["args_json"]
	switch {
	case hasArgs && hasJSON:
		ps.errorf(aj.key.Line, aj.key.Column, "%s has both args and args_json; expected one of them", where)
		ok = false
	case hasArgs:
		raw, err := nodeJSON(a.value, 0)
		if err != nil {
			ps.errorf(err.line, err.col, "%s.args: %s", where, err.msg)
			ok = false
		}
		c.Call.Args = raw
	case hasJSON:
		if s, good := str(ps, aj.value, where+".args_json"); good {
			c.Call.Args = json.RawMessage(s)
		} else {
			ok = false
		}
	}
	return c, ok
}

// nodeError is a problem converting YAML to JSON, at a node.
type nodeError struct {
	line, col int
	msg       string
}

// maxArgsNodeDepth bounds the depth of a case's args, like the decoder's.
const maxArgsNodeDepth = maxArgsDepth

// nodeJSON converts a YAML node to JSON text, keeping the order of keys.
func nodeJSON(n *yaml.Node, depth int) (json.RawMessage, *nodeError) {
	if depth > maxArgsNodeDepth {
		return nil, &nodeError{n.Line, n.Column, fmt.Sprintf("found nesting deeper than %d; expected shallower arguments", maxArgsNodeDepth)}
	}
	switch n.Kind {
	case yaml.MappingNode:
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return nil, &nodeError{k.Line, k.Column, fmt.Sprintf("found the key %s; expected a string key, as JSON objects have", describe(k))}
			}
			if i > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(k.Value)
			b.Write(kj)
			b.WriteByte(':')
			vj, err := nodeJSON(v, depth+1)
			if err != nil {
				return nil, err
			}
			b.Write(vj)
		}
		b.WriteByte('}')
		return json.RawMessage(b.String()), nil
	case yaml.SequenceNode:
		var b strings.Builder
		b.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			vj, err := nodeJSON(item, depth+1)
			if err != nil {
				return nil, err
			}
			b.Write(vj)
		}
		b.WriteByte(']')
		return json.RawMessage(b.String()), nil
	case yaml.ScalarNode:
		var v any
		if n.ShortTag() == "!!str" {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			return nil, &nodeError{n.Line, n.Column, fmt.Sprintf("found %s that does not decode (%v); expected a JSON-like value", describe(n), err)}
		}
		out, err := json.Marshal(v)
		if err != nil {
			return nil, &nodeError{n.Line, n.Column, fmt.Sprintf("found %s, which JSON cannot hold; expected a string, a finite number, a boolean or null", describe(n))}
		}
		return out, nil
	}
	return nil, &nodeError{n.Line, n.Column, fmt.Sprintf("found %s; expected a JSON-like value", describe(n))}
}

// HasPolicy reports whether the file carries an inline policy.
func (cf *CaseFile) HasPolicy() bool { return cf.hasPolicy }

// InlinePolicy parses the file's inline policy. Its problems and warnings
// point at lines of the case file.
func (cf *CaseFile) InlinePolicy(opts Options) (*Policy, []Warning, error) {
	if !cf.hasPolicy {
		return nil, nil, fmt.Errorf("the case file %s has no inline policy; expected a policy key, or a policy given separately", cf.File)
	}
	ps := &problems{file: cf.File, lineOff: cf.policyLine, colOff: cf.policyIndent}
	data := []byte(cf.policy)
	p := parseInto(ps, data, opts)
	if err := ps.err(); err != nil {
		return nil, ps.warnings, err
	}
	p.source = cf.File
	p.warnings = ps.warnings
	return p, ps.warnings, nil
}

// Run decides every case under p.
func (cf *CaseFile) Run(p *Policy) []CaseResult {
	out := make([]CaseResult, len(cf.Cases))
	for i, c := range cf.Cases {
		d := p.Decide(c.Call)
		r := CaseResult{Case: c, Got: d, Pass: true}
		var why []string
		if d.Verdict != c.Want {
			why = append(why, fmt.Sprintf("want %s", c.Want))
		}
		if c.Rule != "" && d.Rule != c.Rule {
			why = append(why, fmt.Sprintf("want rule %s", c.Rule))
		}
		if c.ReasonContains != "" && !strings.Contains(d.Reason, c.ReasonContains) {
			why = append(why, fmt.Sprintf("want a reason containing %q", c.ReasonContains))
		}
		if len(why) > 0 {
			r.Pass = false
			r.Msg = fmt.Sprintf("got %s by %s (%s); %s", d.Verdict, d.Rule, d.Reason, strings.Join(why, ", "))
		}
		out[i] = r
	}
	return out
}
