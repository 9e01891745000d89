package upstream

import (
	"path"
	"runtime"
	"sort"
	"strings"
)

// A child's environment is built from an allowlist, not a denylist: a
// secret-name denylist cannot know every secret's name (webhook URLs,
// DATABASE_URL, KUBECONFIG, AUTHORIZATION, MYSECRETTHING all slipped past
// one), while the few variables a program needs to run at all are well
// known. Everything else reaches a server only when its entry names it in
// env or inheritEnv (DESIGN.md §7).

// inheritedNames are the variables every server gets: what a shell, a
// runtime (Node, Python, Go) and TLS need to start and find things, and
// nothing that grants access to anything.
var inheritedNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"TMPDIR": true, "TZ": true, "LANG": true, "TERM": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true,
	// Python's requests and curl read their own CA bundle variables and
	// ignore SSL_CERT_FILE: behind a TLS-inspecting proxy a Python server
	// fails without them. They name a file of public certificates.
	"REQUESTS_CA_BUNDLE": true, "CURL_CA_BUNDLE": true,
	// The locale categories (POSIX and glibc's), by name: LC_ is also the
	// prefix people give variables to pass them through ssh's AcceptEnv
	// LC_*, and such a variable (LC_DEPLOY_TOKEN) is a secret like any.
	"LC_ALL": true, "LC_CTYPE": true, "LC_COLLATE": true, "LC_MESSAGES": true,
	"LC_MONETARY": true, "LC_NUMERIC": true, "LC_TIME": true, "LC_ADDRESS": true,
	"LC_IDENTIFICATION": true, "LC_MEASUREMENT": true, "LC_NAME": true,
	"LC_PAPER": true, "LC_TELEPHONE": true,
}

// inheritedPrefixes are the families of variables every server gets: the
// XDG base directories and session facts.
var inheritedPrefixes = []string{"XDG_"}

// windowsNames are what programs need on Windows to start at all (the C
// runtime, Winsock and Node read them) and to find the user's profile and
// the temporary directory; they carry paths and machine facts, no secrets.
var windowsNames = map[string]bool{
	"SYSTEMROOT": true, "SYSTEMDRIVE": true, "WINDIR": true, "COMSPEC": true, "PATHEXT": true,
	"TEMP": true, "TMP": true, "USERPROFILE": true, "USERNAME": true, "USERDOMAIN": true,
	"HOMEDRIVE": true, "HOMEPATH": true, "APPDATA": true, "LOCALAPPDATA": true,
	"PROGRAMDATA": true, "PROGRAMFILES": true, "PROGRAMFILES(X86)": true, "PROGRAMW6432": true,
	"COMMONPROGRAMFILES": true, "COMMONPROGRAMFILES(X86)": true, "COMMONPROGRAMW6432": true,
	"ALLUSERSPROFILE": true, "PUBLIC": true, "COMPUTERNAME": true, "OS": true,
	"NUMBER_OF_PROCESSORS": true, "PROCESSOR_ARCHITECTURE": true, "PROCESSOR_IDENTIFIER": true,
}

// proxyNames are the proxy variables, in both spellings programs read. They
// are inherited only without credentials in them.
var proxyNames = map[string]bool{
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
}

// EnvOptions is what a server entry says about its environment.
type EnvOptions struct {
	Explicit   map[string]string // env: set on top of everything
	Inherit    []string          // inheritEnv: names or globs (path.Match) added to the allowlist
	InheritAll bool              // inheritEnv: true — the gate's whole environment
	GOOS       string            // runtime.GOOS when empty; tests set it
}

// EnvNote is something ChildEnv left out that the operator should hear
// about. It names the variable, never its value.
type EnvNote struct {
	Name   string
	Reason string
}

// ChildEnv builds an upstream's environment from the gate's own (parent):
// the allowlisted variables, those the entry's inheritEnv matches, then the
// entry's env on top. A proxy variable with credentials in it (user:pass@)
// is left out unless inheritEnv names it, and reported in the notes. Each
// name appears once, so no program can pick the parent's value over the
// entry's.
func ChildEnv(parent []string, o EnvOptions) ([]string, []EnvNote) {
	goos := o.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	// Windows variable names are case-insensitive.
	fold := func(s string) string {
		if goos == "windows" {
			return strings.ToUpper(s)
		}
		return s
	}
	explicit := make(map[string]bool, len(o.Explicit))
	for k := range o.Explicit {
		explicit[fold(k)] = true
	}
	out := make([]string, 0, len(o.Explicit)+16)
	var notes []EnvNote
	seen := map[string]bool{}
	for _, kv := range parent {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || explicit[fold(name)] || seen[fold(name)] {
			continue
		}
		switch {
		case o.InheritAll, inheritMatches(o.Inherit, name, goos):
			// The entry asked for it by name or pattern: its own choice.
		case proxyNames[name] || (goos == "windows" && proxyNames[strings.ToUpper(name)]):
			if hasUserinfo(value) {
				notes = append(notes, EnvNote{Name: name, Reason: "it carries credentials (user:password@); name it in inheritEnv or set it in env to pass it"})
				continue
			}
		case allowed(name, goos):
		default:
			continue
		}
		seen[fold(name)] = true
		out = append(out, kv)
	}
	keys := make([]string, 0, len(o.Explicit))
	for k := range o.Explicit {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+o.Explicit[k])
	}
	return out, notes
}

// allowed reports whether every server gets the variable name.
func allowed(name, goos string) bool {
	if goos == "windows" {
		up := strings.ToUpper(name)
		if windowsNames[up] {
			return true
		}
		name = up
	}
	if inheritedNames[name] {
		return true
	}
	for _, p := range inheritedPrefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// inheritMatches reports whether one of an entry's inheritEnv patterns
// matches name. Patterns were validated when the servers file was read.
func inheritMatches(patterns []string, name, goos string) bool {
	if goos == "windows" {
		name = strings.ToUpper(name)
	}
	for _, p := range patterns {
		if goos == "windows" {
			p = strings.ToUpper(p)
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// hasUserinfo reports whether a proxy variable's value carries a user name
// or password: an '@' in its authority (scheme://user:pass@host or
// user:pass@host:port, which programs accept too). NO_PROXY lists hosts and
// never has one. Fail closed: any '@' before the path counts. The
// authority is found the way the most lenient parser finds it: WHATWG URL
// parsers (Node, undici) skip any number of slashes and backslashes after
// an http: or https: scheme, so http:/user:pass@proxy and
// http:\\user:pass@proxy carry credentials too.
func hasUserinfo(value string) bool {
	rest := value
	if i := strings.IndexByte(rest, ':'); i > 0 && schemeLike(rest[:i]) {
		rest = rest[i+1:]
	}
	rest = strings.TrimLeft(rest, `/\`)
	if i := strings.IndexAny(rest, `/\?#`); i >= 0 {
		rest = rest[:i]
	}
	// Percent-encoded '@' is still an '@' to some URL parsers.
	return strings.Contains(rest, "@") || strings.Contains(strings.ToLower(rest), "%40")
}

// schemeLike reports whether s has the characters of a URL scheme. A host
// name ("proxy.internal" of proxy.internal:3128) or a user name has them
// too; skipping it as a scheme only moves where the search for '@' starts.
func schemeLike(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// ValidInheritPattern checks one inheritEnv entry: a variable name or a
// glob over names (*, ?, [...]). It returns why it is not one.
func ValidInheritPattern(p string) string {
	switch {
	case p == "":
		return "an empty pattern"
	case strings.ContainsAny(p, "= \t\r\n\x00"):
		return "a pattern with '=', whitespace or NUL in it; expected a variable name or a glob such as AWS_*"
	}
	if _, err := path.Match(p, ""); err != nil {
		return "a malformed glob (unclosed '[' or a trailing '\\')"
	}
	return ""
}
