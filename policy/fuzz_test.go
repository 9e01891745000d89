package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policies"
)

// withoutComments drops comment lines: the fuzzer minimizes every new
// input it finds, at a cost that grows with the square of its size, and the
// comments of the examples teach it nothing.
func withoutComments(data []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

func addPolicySeeds(f *testing.F) {
	// Approval channels (issue 13): approval.via, approval.hosts, a rule's via.
	f.Add([]byte("version: 1\nfallback: ask\napproval:\n  via: [local, elicitation]\n  hosts:\n    codex-mcp-client: {via: [local]}\nrules:\n  - match: mcp:github:*\n    action: ask\n    via: [elicitation]\n"))
	entries, _ := policies.FS.ReadDir(".")
	for _, e := range entries {
		data, _ := policies.FS.ReadFile(e.Name())
		f.Add(withoutComments(data))
	}
	files, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		if cf, err := ParseCases(file, data); err == nil && cf.HasPolicy() {
			f.Add([]byte(cf.policy))
		}
	}
	f.Add([]byte("version: 1\nfallback: ask\nrules:\n  - {match: \"mcp:{a,b}:[x-z]*\", when: args.n > 1, action: deny}\n"))
	f.Add([]byte("version: 1\nfallback: deny\ndeny: &a [x]\nask: *a\n"))
}

var fuzzCalls = []Call{
	{Server: "github", Name: "delete_repo", Args: json.RawMessage(`{"path":"/home/me/work/x","n":3}`)},
	{Server: "filesystem", Name: "write_file", Args: json.RawMessage(`{"path":"/etc/passwd"}`)},
	{Server: "a:b", Name: "c"},
	{Kind: KindPrompt, Server: "github", Name: "p"},
	{Kind: KindResource, Server: "fs", Name: "file:///etc/x"},
	{Kind: KindSampling, Server: "github"},
	{Server: "x", Name: "y", Args: json.RawMessage(`[`)},
}

// FuzzParse: no input makes the parser panic or hang, and a policy it
// accepts decides calls without panicking.
func FuzzParse(f *testing.F) {
	addPolicySeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := Parse("fuzz.yaml", data, Options{KnownServers: []string{"github", "fs"}, Catalog: map[string]ServerNames{
			"github": {Tools: []string{"get_me", "a:b", "x*y"}, Prompts: []string{"p"}},
		}})
		if err != nil {
			if p != nil {
				t.Fatal("a policy and an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, c := range fuzzCalls {
			d := p.Decide(c)
			if d.Verdict > Deny || d.Rule == "" || d.Reason == "" || d.Revision != p.Revision() {
				t.Fatalf("decision %+v", d)
			}
			p.Hidden(c.Kind, c.Server, c.Name)
		}
	})
}

// FuzzPattern: compiling any glob does not panic, a glob never matches a
// call of another namespace or, when it names a server literally, of
// another server, and the index agrees with the pattern's own match.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"mcp:github:get_*", "mcp:*:x", "mcp:{a,b}:c", "mcp:[a:]:x", "mcp:a\\:b:c", "sampling:*", "sampling:a:b", "mcp:**", "**", "resource:fs:file:///**", "mcp:a*:{x:y,z}", "mcp::x", "prompt:?:*", "mcp:shell:*", "mcp:s:a\\*b", "resource:fs:file:///etc/*"} {
		for _, c := range []struct{ server, name string }{{"github", "get_me"}, {"a:b", "c"}, {"a", "b:c"}, {"", ""}, {"fs", "file:///etc"}, {"shell", "a:b"}, {"s", "a*b"}} {
			f.Add(s, c.server, c.name, uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, text, server, name string, k uint8) {
		kind := Kind(k % numKinds)
		if kind == KindSampling {
			name = ""
		}
		p, err := compilePattern(text)
		if err != nil {
			if !strings.Contains(err.Error(), "expected") {
				t.Fatalf("error %q does not say what was expected", err)
			}
			return
		}
		c := Call{Kind: kind, Server: server, Name: name}
		want := p.matches(kind, server, name)
		if !p.all && p.kind != kind && want {
			t.Fatalf("%q matches %q of another namespace", text, c.PolicyName())
		}
		if lit, ok := p.literalServer(); ok && want && lit != server {
			t.Fatalf("%q names the server %q but matches %q", text, lit, c.PolicyName())
		}
		if !p.all && p.kind != kind {
			return // the index of another kind holds the pattern
		}
		// Through a one-rule policy, which also exercises the buckets.
		var ix index
		r := &rule{name: "r", action: Deny}
		ix.staged = append(ix.staged, &entry{pat: p, rule: r, sev: Deny})
		ix.finish(maxMerged)
		if got := ix.search(server, name, nil).e != nil; got != want {
			t.Fatalf("pattern %q, call %s: the index says %v, the pattern says %v", text, c.PolicyName(), got, want)
		}
	})
}

// FuzzNames: whatever server and name an upstream picks (colons, glob
// characters, backslashes), ns:<server>:* matches every name of that server
// and ns:<other>:* none of them, the printed policy name reads back to the
// same call, and, read as a glob, matches that call and no other name.
func FuzzNames(f *testing.F) {
	for _, c := range [][3]string{{"shell", "a:b", "other"}, {"a:b", "c", "a"}, {"s", "a*b", "s*"}, {"s", "[x]", "?"}, {"s\\", "\\", "s"}, {"fs", "file:///etc/*", "f"}, {"x", "{a,b}", "x:"}} {
		f.Add(c[0], c[1], c[2], uint8(0))
	}
	f.Fuzz(func(t *testing.T, server, name, other string, k uint8) {
		kind := Kind(k % numKinds)
		checkNames(t, kind, server, name, other)
	})
}

func checkNames(t *testing.T, kind Kind, server, name, other string) {
	t.Helper()
	if kind == KindSampling {
		name = ""
	}
	if server == "" || (name == "" && kind != KindSampling) || checkVisible(server) != nil || checkVisible(name) != nil || checkVisible(other) != nil {
		return
	}
	c := Call{Kind: kind, Server: server, Name: name}
	pn := c.PolicyName()
	back, err := ParseName(pn)
	if err != nil || back.Kind != c.Kind || back.Server != c.Server || back.Name != c.Name {
		t.Fatalf("ParseName(%q) = %+v, %v; want %+v", pn, back, err, c)
	}
	everyOf := func(server string) string {
		if kind == KindSampling {
			return "sampling:" + naming.EscapeServer(server)
		}
		return kind.String() + ":" + naming.EscapeServer(server) + ":*"
	}
	every := everyOf(server)
	p, err := compilePattern(every)
	if err != nil {
		t.Fatalf("compile %q: %v", every, err)
	}
	if !p.matches(kind, server, name) {
		t.Fatalf("%q does not match %s", every, pn)
	}
	if other != server && p.matches(kind, other, name) {
		t.Fatalf("%q matches the server %q", every, other)
	}
	if other != "" && other != server {
		q, err := compilePattern(everyOf(other))
		if err != nil {
			t.Fatal(err)
		}
		if q.matches(kind, server, name) {
			t.Fatalf("%q matches %s", q.text, pn)
		}
	}
	exact, err := compilePattern(pn)
	if err != nil {
		t.Fatalf("compile the printed name %q: %v", pn, err)
	}
	if !exact.matches(kind, server, name) {
		t.Fatalf("the printed name %q, as a glob, does not match its call", pn)
	}
	if other != name && kind != KindSampling && exact.matches(kind, server, other) {
		t.Fatalf("the printed name %q, as a glob, matches the name %q", pn, other)
	}
}

// FuzzParseCases: no input makes the case parser panic, and accepted cases
// run.
func FuzzParseCases(f *testing.F) {
	files, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(withoutComments(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := ParseCases("fuzz.yaml", data)
		if err != nil {
			return
		}
		p := Default()
		if cf.HasPolicy() {
			if ip, _, err := cf.InlinePolicy(Options{}); err == nil {
				p = ip
			}
		}
		if res := cf.Run(p); len(res) != len(cf.Cases) {
			t.Fatalf("%d results for %d cases", len(res), len(cf.Cases))
		}
	})
}

// FuzzDecodeArgs: any bytes decode or fail without panicking, and what
// decodes is an object.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `null`, ``, `[1]`, `{"a":{"b":[1,2.5,"x",null,true]}}`, `{"a":1,"a":2}`, `{"n":18446744073709551616}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeArgs(data)
		if err == nil && m == nil {
			t.Fatal("nil object without an error")
		}
		if err == nil && json.Valid(data) == false && len(strings.Trim(string(data), " \t\r\n")) > 0 {
			t.Fatalf("decoded invalid JSON %q", data)
		}
	})
}
