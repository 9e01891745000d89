package upstream

import (
	"slices"
	"testing"
)

func TestSecretLooking(t *testing.T) {
	secret := []string{
		"GITHUB_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
		"API_KEY", "OPENAI_API_KEY", "APIKEY", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "NPM_CONFIG__AUTH",
		"NPM_AUTH", "DB_PASSWORD", "DB_PASS", "MY_SECRET", "CLIENT_SECRETS", "SESSION_COOKIE",
		"GH_PAT", "DOCKER_CREDENTIALS", "ghp_token", "Slack_Bot_Token", "PRIVATE_KEY", "secret",
		"PGPASSWORD", "MYSQL_PWD", "VAULTTOKEN", "CLIENTSECRET",
	}
	kept := []string{
		"PATH", "HOME", "KEYBOARD_LAYOUT", "AUTHOR", "AUTHOR_NAME", "LANG", "LC_ALL", "TERM", "USER",
		"KEY", "KEY_FILE_DIR", "PATHEXT", "TOKENIZERS_PARALLELISM", "XDG_CONFIG_HOME", "PASSAGE", "AUTHORITY",
		"", "_", "PWD", "OLDPWD",
	}
	for _, n := range secret {
		if !SecretLooking(n) {
			t.Errorf("SecretLooking(%q) = false, want true", n)
		}
	}
	for _, n := range kept {
		if SecretLooking(n) {
			t.Errorf("SecretLooking(%q) = true, want false", n)
		}
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/me",
		"GITHUB_TOKEN=ghp_parent",
		"AWS_SECRET_ACCESS_KEY=aws",
		"API_KEY=k",
		"SSH_AUTH_SOCK=/tmp/agent",
		"NPM_CONFIG__AUTH=npm",
		"KEYBOARD_LAYOUT=us",
		"AUTHOR=me",
		"LANG=C.UTF-8",
		"EMPTY=",
		"WITH_EQUALS=a=b",
		"MALFORMED",
		"DEBUG=1",
	}
	tests := []struct {
		name     string
		explicit map[string]string
		want     []string
	}{
		{"stripped", nil, []string{
			"PATH=/usr/bin:/bin", "HOME=/home/me", "KEYBOARD_LAYOUT=us", "AUTHOR=me", "LANG=C.UTF-8",
			"EMPTY=", "WITH_EQUALS=a=b", "DEBUG=1",
		}},
		{"explicit wins and re-adds", map[string]string{"GITHUB_TOKEN": "ghp_explicit", "DEBUG": "0", "NEW": "x"}, []string{
			"PATH=/usr/bin:/bin", "HOME=/home/me", "KEYBOARD_LAYOUT=us", "AUTHOR=me", "LANG=C.UTF-8",
			"EMPTY=", "WITH_EQUALS=a=b",
			"DEBUG=0", "GITHUB_TOKEN=ghp_explicit", "NEW=x", // explicit, sorted by name
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildEnv(parent, tt.explicit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ChildEnv =\n %q\nwant\n %q", got, tt.want)
			}
			// Each name at most once: a duplicate would let the parent's
			// value win in some programs.
			seen := map[string]bool{}
			for _, kv := range got {
				name, _, _ := cutEnv(kv)
				if seen[name] {
					t.Errorf("%s appears twice", name)
				}
				seen[name] = true
			}
		})
	}
}

func cutEnv(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

func TestSecretValue(t *testing.T) {
	for v, want := range map[string]bool{
		"postgres://app:hunter2@db:5432/app": true,
		"redis://:s3cret@cache:6379":         true,
		"https://example.invalid/path":       false,
		"postgres://app@db/app":              false,
		"/usr/bin:/bin":                      false,
		"user:pass@host":                     false,
	} {
		if got := SecretValue(v); got != want {
			t.Errorf("SecretValue(%q) = %v, want %v", v, got, want)
		}
	}
	env := ChildEnv([]string{"DATABASE_URL=postgres://app:hunter2@db/app", "HOME=/h"}, nil)
	if len(env) != 1 || env[0] != "HOME=/h" {
		t.Errorf("a URL with a password reached the child: %v", env)
	}
}
