package policy

import (
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/audit"
)

// A failed condition's error reaches the decision's reason, which the audit
// log records through audit.Redact: whatever CEL puts in its message of an
// argument's value is quoted, so the audit line has its size and digest,
// never the value.
func TestConditionErrorsQuoteArgumentText(t *testing.T) {
	const secret = "S3CRET-VALUE("
	for _, cond := range []string{
		`args.p.matches(args.n)`, // error parsing regexp: ... `<value>`
		`args.m[args.n] == 1`,    // no such key: <value>
		`args[args.n] == 1`,
		`int(args.n) > 1`,
		`timestamp(args.n) > timestamp("2020-01-01T00:00:00Z")`,
		`path.within(args.n, "/x")`,
	} {
		p := mustParse(t, "version: 1\nfallback: deny\nallow: [mcp:fs:a]\nrules:\n  - {match: mcp:fs:a, when: '"+cond+"', action: deny}\n")
		d := p.Decide(Call{Server: "fs", Name: "a", Args: []byte(`{"n":"` + secret + `","p":"x","m":{}}`)})
		if d.Verdict != Deny || !strings.Contains(d.Reason, "its condition failed") {
			t.Errorf("%s: %s (%s); want a deny by a failed condition", cond, d.Verdict, d.Reason)
		}
		if r := audit.Redact(d.Reason); strings.Contains(r, "S3CRET") {
			t.Errorf("%s: the audited reason carries the value: %s", cond, r)
		}
	}
}
