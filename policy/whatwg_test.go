package policy

import "testing"

// A JavaScript server reads a file: URI with Node's URL: a backslash is a
// slash there, and tabs and newlines vanish. A deny holds against every
// spelling that reaches the denied file that way.
func TestResourceURIWHATWGReading(t *testing.T) {
	p := mustParse(t, "version: 1\nfallback: deny\ndeny: [\"resource:fs:file:///etc/**\", \"resource:fs:https://internal.example/admin/**\"]\n")
	for _, uri := range []string{
		`file:///tmp\..\etc\passwd`,
		`file:///tmp/%2e%2e\etc/passwd`,
		`file:\\\etc\passwd`,
		"file:///e\ttc/passwd",
		"file:///et\nc/passwd",
		" file:///etc/passwd",
		"file:etc/passwd",
		"file:etc/../../etc/passwd",
		`https://internal.example\admin\users`,
		`https://internal.example/x\..\admin/users`,
	} {
		if d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: uri}); d.Verdict != Deny {
			t.Errorf("%q: %s (%s); want deny", uri, d.Verdict, d.Reason)
		}
		if !p.Hidden(KindResource, "fs", uri) {
			t.Errorf("%q: not hidden", uri)
		}
	}
	for _, uri := range []string{`file:///tmp/a\b`, `notes://x\..\etc/passwd`, `file:///tmp/x?q=\..\etc`} {
		if d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: uri}); d.Verdict != Allow {
			t.Errorf("%q: %s (%s); want allow", uri, d.Verdict, d.Reason)
		}
	}
}
