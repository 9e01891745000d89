package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// explain --user decides for a given user: the same call gets each user's
// verdict under a condition on user.groups, user.email and user.sub;
// without --user it is the OS user, as in stdio mode.
func TestExplainUser(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(pol, []byte(fmt.Sprintf(`version: 1
fallback: deny
rules:
  - name: devs
    match: [mcp:s:t]
    when: '"dev" in user.groups && user.email.endsWith("@example.com")'
    action: allow
  - name: me
    match: [mcp:s:mine]
    when: 'user.sub == "uid:%d"'
    action: allow
`, os.Getuid())), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "alice", "--groups", "ops,dev", "--email", "alice@example.com", "mcp:s:t"}, `"verdict":"allow","rule":"devs"`},
		{[]string{"--user", "alice", "--groups", "dev", "mcp:s:t"}, `"verdict":"deny"`},
		{[]string{"--user", "bob", "--groups", "ops", "--email", "bob@example.com", "mcp:s:t"}, `"verdict":"deny"`},
		{[]string{"mcp:s:mine"}, `"verdict":"allow","rule":"me"`},
		{[]string{"--user", "bob", "mcp:s:mine"}, `"verdict":"deny"`},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"explain", "--policy", pol}, c.args...), strings.NewReader(""), &out, &errb)
		if code != 0 || !strings.Contains(out.String(), c.want) {
			t.Errorf("explain %v: exit %d %s%s; want %s", c.args, code, out.String(), errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"explain", "--policy", pol, "--groups", "dev", "mcp:s:t"}, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "give --user SUB too") {
		t.Errorf("--groups without --user: exit %d %s", code, errb.String())
	}
}

func TestHTTPFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"serve", "--servers", "x", "--tls-cert", "c.pem"}, "--tls-cert is an option of the HTTP front end; give --http ADDR too"},
		{[]string{"serve", "--servers", "x", "--http", "127.0.0.1:0", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--servers", "x", "--http", "127.0.0.1:0", "--oidc-issuer", "https://i.test"}, "--oidc-issuer and --oidc-audience go together"},
		{[]string{"serve", "--servers", "x", "--http", "127.0.0.1:0", "--oidc-issuer", "https://i.test", "--oidc-audience", "a", "--auth-tokens", "t"}, "not both"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.says) {
			t.Errorf("%v: exit %d %q; want usage error %q", c.args, code, errb.String(), c.says)
		}
	}
}
