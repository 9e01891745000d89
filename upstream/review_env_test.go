package upstream

import (
	"strings"
	"testing"
)

// Credentials in a proxy variable are found wherever a lenient URL parser
// finds an authority: WHATWG parsers (Node's URL, undici) skip any number
// of slashes and backslashes after http: and read user:pass@ there.
func TestHasUserinfoLenientSlashes(t *testing.T) {
	for v, want := range map[string]bool{
		"http:/user:pass@proxy:8080":   true,
		`http:/\user:pass@proxy:8080`:  true,
		`http:\\user:pass@proxy:8080`:  true,
		"http:///user:pass@proxy:8080": true,
		"https:user:pass@proxy:8080":   true,
		"HTTP:/user@proxy":             true,
		"http:/proxy:3128":             false,
		"http:/proxy:3128/a@b":         false,
		`http:\\proxy:3128\a@b`:        false,
	} {
		if got := hasUserinfo(v); got != want {
			t.Errorf("hasUserinfo(%q) = %v, want %v", v, got, want)
		}
	}
	env, notes := ChildEnv([]string{"HTTPS_PROXY=http:/user:pass@proxy:8080", "PATH=/bin"}, EnvOptions{GOOS: "linux"})
	if len(env) != 1 || env[0] != "PATH=/bin" || len(notes) != 1 || notes[0].Name != "HTTPS_PROXY" {
		t.Fatalf("env %q, notes %v", env, notes)
	}
}

// A pattern that matches every name is inheritEnv: true, warned about the
// same way, however it is spelled.
func TestInheritEverythingSpellings(t *testing.T) {
	for _, p := range []string{"*", "**", "?*", "*?", "***"} {
		_, all := parseInheritEnv([]byte(`["`+p+`"]`), func(string, ...any) { t.Errorf("%s: refused", p) })
		if !all {
			t.Errorf("%q is not taken for the whole environment", p)
		}
	}
	if _, all := parseInheritEnv([]byte(`["AWS_*", "?"]`), func(string, ...any) {}); all {
		t.Error("AWS_* and ? taken for the whole environment")
	}
}

// The locale categories pass; other LC_ names, which is how variables are
// smuggled through ssh's AcceptEnv LC_*, do not.
func TestLocaleByCategory(t *testing.T) {
	env, _ := ChildEnv([]string{"LC_ALL=C.UTF-8", "LC_TIME=C", "LC_PAPER=a4", "LC_DEPLOY_TOKEN=s3cret", "LC_X=1"}, EnvOptions{GOOS: "linux"})
	got := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		got[name] = true
	}
	for _, n := range []string{"LC_ALL", "LC_TIME", "LC_PAPER"} {
		if !got[n] {
			t.Errorf("%s left out", n)
		}
	}
	for _, n := range []string{"LC_DEPLOY_TOKEN", "LC_X"} {
		if got[n] {
			t.Errorf("%s passed", n)
		}
	}
}
