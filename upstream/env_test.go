package upstream

import (
	"slices"
	"strings"
	"testing"
)

// leakers are variables that a secret-name denylist let through: each
// carries a credential or grants access, under a name no word list covers.
var leakers = []string{
	"SLACK_WEBHOOK_URL=https://hooks.slack.invalid/services/T000/B000/XXXX",
	"DATABASE_URL=postgres://app:hunter2@db/app",
	"SENTRY_DSN=https://abc123@o1.ingest.invalid/1",
	"ID_JWT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
	"AUTHORIZATION=Bearer abc",
	"KUBECONFIG=/home/me/.kube/config",
	"MYSECRETTHING=x",
	"AWS_PROFILE=prod",
	"AWS_SESSION_TOKEN=x",
	"GOOGLE_APPLICATION_CREDENTIALS=/home/me/sa.json",
	"NPM_TOKEN=npm_x",
	"GITHUB_TOKEN=ghp_x",
	"SSH_AUTH_SOCK=/tmp/agent",
	"DOCKER_HOST=tcp://x:2376",
	"PWD=/home/me/secret-project",
}

var basics = []string{
	"PATH=/usr/bin:/bin", "HOME=/home/me", "USER=me", "LOGNAME=me", "SHELL=/bin/sh", "TMPDIR=/tmp",
	"TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TERM=xterm", "XDG_CONFIG_HOME=/home/me/.config",
	"SSL_CERT_FILE=/etc/ca.pem", "SSL_CERT_DIR=/etc/ssl/certs", "NODE_EXTRA_CA_CERTS=/etc/extra.pem",
	"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost,.internal",
}

func TestChildEnvAllowlist(t *testing.T) {
	parent := append(append(append([]string{}, basics...), leakers...),
		"MALFORMED", "=C:=C:\\", "LC_=x", "XDG_=x",
		"HTTP_PROXY=http://user:pw@proxy:3128", "all_proxy=socks5://u%40x:p@h:1", "ALL_PROXY=u:p@proxy:1080")
	got, notes := ChildEnv(parent, EnvOptions{GOOS: "linux"})
	if !slices.Equal(got, basics) {
		t.Errorf("ChildEnv =\n %q\nwant\n %q", got, basics)
	}
	var withheld []string
	for _, n := range notes {
		withheld = append(withheld, n.Name)
		if strings.Contains(n.Reason, "pw") || strings.Contains(n.Reason, "proxy:") {
			t.Errorf("a note carries the value: %+v", n)
		}
	}
	if want := []string{"HTTP_PROXY", "all_proxy", "ALL_PROXY"}; !slices.Equal(withheld, want) {
		t.Errorf("notes name %q, want %q", withheld, want)
	}
}

func TestChildEnvInherit(t *testing.T) {
	parent := append(append([]string{}, basics...), leakers...)
	t.Run("names and globs", func(t *testing.T) {
		got, _ := ChildEnv(parent, EnvOptions{GOOS: "linux", Inherit: []string{"AWS_*", "KUBECONFIG", "NO_SUCH"}})
		want := append(append([]string{}, basics...), "KUBECONFIG=/home/me/.kube/config", "AWS_PROFILE=prod", "AWS_SESSION_TOKEN=x")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ChildEnv =\n %q\nwant\n %q", got, want)
		}
	})
	t.Run("true", func(t *testing.T) {
		got, _ := ChildEnv(parent, EnvOptions{GOOS: "linux", InheritAll: true})
		if !slices.Equal(got, parent) {
			t.Errorf("inheritEnv true: got %q", got)
		}
	})
	t.Run("case matters off Windows", func(t *testing.T) {
		got, _ := ChildEnv([]string{"aws_profile=x", "path=/x"}, EnvOptions{GOOS: "linux", Inherit: []string{"AWS_*"}})
		if len(got) != 0 {
			t.Errorf("got %q", got)
		}
	})
	t.Run("explicit wins, each name once", func(t *testing.T) {
		got, _ := ChildEnv([]string{"PATH=/a", "HOME=/h", "PATH=/b", "TOKEN=p"}, EnvOptions{GOOS: "linux",
			Explicit: map[string]string{"TOKEN": "e", "HOME": "/e"}, Inherit: []string{"TOKEN"}})
		if want := []string{"PATH=/a", "HOME=/e", "TOKEN=e"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

func TestChildEnvWindows(t *testing.T) {
	parent := []string{"SystemRoot=C:\\Windows", "Path=C:\\bin", "APPDATA=C:\\u\\a", "ProgramFiles(x86)=C:\\p",
		"https_proxy=http://u:p@proxy:1", "GITHUB_TOKEN=x", "Aws_Profile=p", "COMSPEC=cmd.exe"}
	got, notes := ChildEnv(parent, EnvOptions{GOOS: "windows", Inherit: []string{"AWS_*"}, Explicit: map[string]string{"PATH": "C:\\mine"}})
	want := []string{"SystemRoot=C:\\Windows", "APPDATA=C:\\u\\a", "ProgramFiles(x86)=C:\\p", "Aws_Profile=p", "COMSPEC=cmd.exe", "PATH=C:\\mine"}
	if !slices.Equal(got, want) {
		t.Errorf("ChildEnv =\n %q\nwant\n %q", got, want)
	}
	if len(notes) != 1 || notes[0].Name != "https_proxy" {
		t.Errorf("notes %+v", notes)
	}
	// Windows names are for Windows: elsewhere they are ordinary variables.
	if got, _ := ChildEnv([]string{"APPDATA=x"}, EnvOptions{GOOS: "linux"}); len(got) != 0 {
		t.Errorf("linux got %q", got)
	}
}

func TestHasUserinfo(t *testing.T) {
	for v, want := range map[string]bool{
		"http://proxy:3128":            false,
		"proxy.internal:3128":          false,
		"http://proxy:3128/a@b":        false,
		"http://user:pass@proxy:3128":  true,
		"http://user@proxy:3128":       true,
		"user:pass@proxy:3128":         true,
		"socks5h://u%40corp:p@proxy:1": true,
		"http://proxy%40x:1":           true,
		"localhost,127.0.0.1,.corp":    false,
		"":                             false,
	} {
		if got := hasUserinfo(v); got != want {
			t.Errorf("hasUserinfo(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestValidInheritPattern(t *testing.T) {
	for p, ok := range map[string]bool{
		"AWS_*": true, "KUBECONFIG": true, "NPM_CONFIG_?": true, "[AB]_X": true, "ProgramFiles(x86)": true,
		"": false, "A=B": false, "A B": false, "[AB": false, "A\x00": false, " AWS_*": false,
	} {
		if got := ValidInheritPattern(p) == ""; got != ok {
			t.Errorf("ValidInheritPattern(%q) ok = %v, want %v", p, got, ok)
		}
	}
}
