package upstream

import (
	"regexp"
	"sort"
	"strings"
)

// secretWords are the words that make a variable name look like it holds a
// secret. Names are split at '_' and compared word by word, so PATH, KEYBOARD
// or AUTHOR_NAME pass while GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY and NPM_AUTH
// do not.
var secretWords = map[string]bool{
	"SECRET": true, "SECRETS": true, "TOKEN": true, "TOKENS": true,
	"PASSWORD": true, "PASSWD": true, "PASS": true, "PASSPHRASE": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "CREDS": true,
	"APIKEY": true, "AUTH": true, "COOKIE": true, "COOKIES": true,
	"PAT": true,
}

// SecretLooking reports whether an environment variable name looks like it
// holds a secret: a secret word anywhere, a word that ends in one
// (PGPASSWORD), KEY or PWD after another word (API_KEY, AWS_ACCESS_KEY_ID,
// MYSQL_PWD), or the SSH_ prefix (SSH_AUTH_SOCK reaches an agent that signs
// for the user).
func SecretLooking(name string) bool {
	up := strings.ToUpper(name)
	if strings.HasPrefix(up, "SSH_") {
		return true
	}
	words := strings.Split(up, "_")
	for i, w := range words {
		if secretWords[w] {
			return true
		}
		if (w == "KEY" || w == "PWD") && i > 0 {
			return true
		}
		for _, suffix := range []string{"PASSWORD", "PASSWD", "SECRET", "TOKEN"} {
			if strings.HasSuffix(w, suffix) {
				return true
			}
		}
	}
	return false
}

// credentialURL matches a URL that carries a password (scheme://user:pass@),
// as DATABASE_URL and REDIS_URL often do.
var credentialURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:[^/@\s]+@`)

// SecretValue reports whether a variable's value looks like a secret
// whatever its name: a URL with a password in it.
func SecretValue(value string) bool { return credentialURL.MatchString(value) }

// ChildEnv builds an upstream's environment: the gate's own environment
// without secret-looking variables, then the server's explicit env on top.
// A server that needs a token says so in the servers file; every other
// server never sees it (DESIGN.md §7).
func ChildEnv(parent []string, explicit map[string]string) []string {
	out := make([]string, 0, len(parent)+len(explicit))
	for _, kv := range parent {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || SecretLooking(name) || SecretValue(value) {
			continue
		}
		if _, override := explicit[name]; override {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(explicit))
	for k := range explicit {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+explicit[k])
	}
	return out
}
