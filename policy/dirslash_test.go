package policy

import "testing"

// A URI whose path ends at a segment boundary names a directory; `..` or
// `.` before that boundary must not drop the slash that a deny on dir/**
// needs: file:///tmp/../etc/ is /etc/ as a server reads it.
func TestResourceDirectoryKeepsSlash(t *testing.T) {
	p := mustParse(t, "version: 1\nfallback: deny\ndeny: [\"resource:fs:file:///etc/**\", \"resource:fs:mem://secret/**\"]\n")
	for _, uri := range []string{
		"file:///etc/",
		"file:///tmp/../etc/",
		"file:///tmp/%2e%2e/etc/",
		"file:///etc/./",
		"file:///etc/x/..",
		"file:///etc/.",
		"mem://secret/a/..",
		"mem://secret/./",
	} {
		if d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: uri}); d.Verdict != Deny {
			t.Errorf("%s: %s (%s); want deny", uri, d.Verdict, d.Reason)
		}
		if !p.Hidden(KindResource, "fs", uri) {
			t.Errorf("%s: not hidden", uri)
		}
	}
	if d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: "file:///tmp/"}); d.Verdict != Allow {
		t.Errorf("file:///tmp/: %s (%s); want allow", d.Verdict, d.Reason)
	}
}
