package upstream

import "testing"

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
