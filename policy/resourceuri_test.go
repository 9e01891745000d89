package policy

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCanonicalURI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"file:///etc/passwd", "file:///etc/passwd"},
		{"FILE:///etc//passwd", "file:///etc/passwd"},
		{"file:///tmp/../etc/passwd", "file:///etc/passwd"},
		{"file:///%65tc/passwd", "file:///etc/passwd"},
		{"file:///etc/passwd#frag", "file:///etc/passwd"},
		{"file:///etc/./passwd/", "file:///etc/passwd"},
		{"file:///etc/%2E%2E/etc/passwd", "file:///etc/passwd"},
		{"file:///../../etc/passwd", "file:///etc/passwd"},
		{"file:///", "file:///"},
		{"file:///etc/pass%2fwd", "file:///etc/pass%2Fwd"}, // reserved: kept, hex in upper case
		{"file:///a%zzb", "file:///a%25zzb"},               // a % that starts no encoding
		{"file:///a%", "file:///a%25"},                     // at the end
		{"file:///%%41b", "file:///%25Ab"},                 // idempotent: the % is no longer bare
		{"HTTP://User@Example.COM:8080/a/./b/../c?q=%41#x", "http://User@example.com:8080/a/c?q=A"},
		{"http://EXAMPLE.com", "http://example.com"},
		{"http://h%4Fst/", "http://host/"},
		{"postgres://db/Table/../Other?x=1&y=2", "postgres://db/Other?x=1&y=2"},
		{"urn:ISBN:0451450523", "urn:ISBN:0451450523"},
		{"note:a/../b", "note:b"},
		{"relative/../x:y", "x%3Ay"}, // a colon in the first segment would read as a scheme
		{"", ""},
		{"#only", ""},
		{"?q", "?q"},
		{"1a:b", "1a%3Ab"},
		{"memo://insights", "memo://insights"},
		{"test://static/resource/1", "test://static/resource/1"},
	} {
		got := canonicalURI(tt.in)
		if got != tt.want {
			t.Errorf("canonicalURI(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if again := canonicalURI(got); again != got {
			t.Errorf("canonicalURI(%q) = %q, not idempotent: %q", tt.in, got, again)
		}
	}
}

// TestResourceDenyForms: a deny on a file tree is not walked around by any
// spelling of a URI inside it, symlinks under either reading included, and
// a resource list hides exactly what a read would refuse.
func TestResourceDenyForms(t *testing.T) {
	root := pathTree(t, map[string]string{
		"etc/passwd":    "",
		"etc/localtime": "/zoneinfo/UTC",
		"zoneinfo/UTC":  "",
		"tmp/":          "",
		"tmp/etclink":   "/etc",
		"tmp/deep":      "/zoneinfo",
		"loop/a":        "/loop/b",
		"loop/b":        "/loop/a",
	})
	p := mustParse(t, `version: 1
fallback: ask
deny: ["resource:fs:file://`+root+`/etc/**", "resource:web:https://secret.example/**"]
`)
	denied := []string{
		"file://" + root + "/etc/passwd",
		"file://" + root + "/tmp/../etc/passwd",
		"FILE://" + root + "/etc//passwd",
		"file://" + strings.Replace(root, "/", "/%2F", 1) + "/etc/passwd",
		"file://" + root + "/%65tc/passwd",
		"file://" + root + "/etc/passwd#frag",
		"file://localhost" + root + "/etc/passwd",
		"file:" + root + "/etc/passwd",
		"file://" + root + "/etc%2Fpasswd",
		"file://" + strings.Replace(root, "/", "%2F", 1) + "/etc/passwd", // read whole after file:// and decoded: root/etc/passwd
		"file://" + strings.ReplaceAll(root, "/", "%2F") + "%2Fetc%2Fpasswd",
		"file://..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd", // relative to a working directory: fails closed
		"file://.ssh%2Fid_rsa",
		"file://x%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
		"file:.ssh/id_rsa", // relative to a working directory (Python's urlparse reads the path as it is): fails closed
		"file:x/../../../../../../../../../etc/passwd",
		"file://..%5C..%5Cetc%5Cpasswd",
		"file://etc/passwd", // read whole after file:// by a server whose working directory is /
		"file://tmp/../etc/passwd",
		"file://tmp/etclink/passwd",
		"file://%252Fetc/passwd", // decoded once: the relative %2Fetc/passwd
		"file://~/.ssh/id_rsa",   // a server that expands ~
		"file://[::1]/tmp/x",
		"file://h:22/tmp/x",
		"file://localhost/../tmp/etclink/passwd", // a directory localhost in the working directory
		"file://localhost%2F..%2Fetc%2Fpasswd",
		"file://{x}/../tmp/etclink/passwd",                         // a directory {x} in the working directory
		"file://" + root + "/tmp/etclink/passwd",                   // a symlink into etc
		"file://" + root + "/etc/localtime/../passwd",              // /etc/<file>/../passwd: lexical reading
		"file://" + root + "/tmp/deep/../etc/passwd",               // kernel: zoneinfo/../etc
		"file://" + root + "/loop/a/x",                             // cannot be resolved: fails closed
		"file://" + root + "/tmp/etclink/passwd%00/../../../tmp/x", // a C-string server opens etc/passwd: fails closed
		"HTTPS://SECRET.example/a/../b",
		"https://secret.example/%61",
	}
	allowed := []string{
		"file://" + root + "/tmp/x",
		"file://localhost" + root + "/tmp/x",
		"file://LocalHost" + root + "/tmp/x",
		"file:" + root + "/tmp/x",
		"file://{path}", // a template, decided when it is completed
		"file://{+path}",
		"file://" + root + "/etcetera/x",
		"file://" + root + "/zoneinfo/UTC",
		"https://public.example/a",
		"https://secret.example.org/a",
	}
	for _, uri := range denied {
		d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: uri})
		if strings.HasPrefix(strings.ToLower(uri), "http") {
			d = p.Decide(Call{Kind: KindResource, Server: "web", Name: uri})
		}
		if d.Verdict != Deny {
			t.Errorf("%s: %s (%s); want deny", uri, d.Verdict, d.Reason)
		}
		if strings.Contains(d.Reason, uri) || strings.Contains(d.Reason, root+"/loop") {
			t.Errorf("%s: the reason %q repeats the URI", uri, d.Reason)
		}
		server := "fs"
		if strings.HasPrefix(strings.ToLower(uri), "http") {
			server = "web"
		}
		if !p.Hidden(KindResource, server, uri) {
			t.Errorf("%s is listed; want it hidden as its read is refused", uri)
		}
	}
	for _, uri := range allowed {
		server := "fs"
		if strings.HasPrefix(uri, "http") {
			server = "web"
		}
		if d := p.Decide(Call{Kind: KindResource, Server: server, Name: uri}); d.Verdict != Allow {
			t.Errorf("%s: %s (%s); want allow", uri, d.Verdict, d.Reason)
		}
		if p.Hidden(KindResource, server, uri) {
			t.Errorf("%s is hidden; want it listed", uri)
		}
	}
	d := p.Decide(Call{Kind: KindResource, Server: "fs", Name: "file://" + root + "/tmp/../etc/passwd"})
	if d.Rule != "deny[0]" || !strings.Contains(d.Reason, "canonical form") {
		t.Errorf("decision %+v; want deny[0], saying the canonical form was denied", d)
	}
	// A policy without resource rules decides resources without looking at
	// their forms or the file system.
	q := mustParse(t, "version: 1\nfallback: ask\n")
	if d := q.Decide(Call{Kind: KindResource, Server: "fs", Name: "file://" + root + "/loop/a/x"}); d.Verdict != Allow {
		t.Errorf("no resource rules: %+v", d)
	}
}

// FuzzCanonicalURI: canonicalisation never panics and is idempotent, and
// the forms of a URI start with the URI as sent and hold its canonical form.
func FuzzCanonicalURI(f *testing.F) {
	for _, s := range []string{
		"file:///etc/passwd", "FILE:///etc//passwd", "file:///tmp/../etc/passwd", "file:///%65tc/passwd#x",
		"http://User@Example.COM:8080/a/./b/../c?q=%41#x", "a/../b:c", "%", "%%41b", "//h", "x:", "://", "file:",
		"file:%2e%2e/etc", "urn:a:b", "?a#b", "/../..", "file://localhost/etc", "s://[::1]:80/p",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := canonicalURI(s)
		if again := canonicalURI(c); again != c {
			t.Fatalf("canonicalURI(%q) = %q, then %q: not idempotent", s, c, again)
		}
		if strings.Contains(c, "#") && !strings.Contains(s, "#") {
			t.Fatalf("canonicalURI(%q) = %q gained a fragment", s, c)
		}
		forms, err := resourceForms(s)
		if len(forms) == 0 || forms[0].uri != s {
			t.Fatalf("resourceForms(%q) = %v, %v; want the URI as sent first", s, forms, err)
		}
		if c != s && (len(forms) < 2 || forms[1].uri != c) {
			t.Fatalf("resourceForms(%q) = %v; want the canonical form %q", s, forms, c)
		}
	})
}

// FuzzPathReadings: resolving any path under either reading neither panics
// nor hangs, and the lexical reading of a path is that of its cleaned text.
func FuzzPathReadings(f *testing.F) {
	for _, s := range []string{"/etc/passwd", "/tmp/../etc/./x", "//a//b/", "/proc/self/cwd/../x", "/dev/fd/0/..", "relative/x", "", "/" + strings.Repeat("a/../", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		for r := range reading(numReadings) {
			_, _ = pathWithin(p, "/tmp", r)
			_, _ = pathHasSegment(p, []string{".ssh", "*.env"}, r)
		}
		if !filepath.IsAbs(p) {
			return
		}
		a, errA := resolvePath(p, readLexical, nil)
		b, errB := resolvePath(filepath.Clean(p), readLexical, nil)
		if a != b || (errA == nil) != (errB == nil) {
			t.Fatalf("lexical reading of %q = %q, %v; of its cleaned text %q, %v", p, a, errA, b, errB)
		}
	})
}
