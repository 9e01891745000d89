package upstream

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func lookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

var testVars = lookup(map[string]string{
	"TOKEN": "t0k",
	"HOME":  "/home/me",
	"EMPTY": "",
	"PORT":  "8080",
})

func TestParseServersValid(t *testing.T) {
	tests := []struct {
		name string
		file string
		data string
		want []Config
	}{
		{
			name: "claude desktop",
			file: "/etc/claude/claude_desktop_config.json",
			data: `{
				"globalShortcut": "Ctrl+Space",
				"preferences": {"theme": "dark"},
				"mcpServers": {
					"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
					"github": {"command": "docker", "args": ["run", "-i", "--rm", "images.example/github-mcp-server"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${TOKEN}"}}
				}
			}`,
			want: []Config{
				{Name: "filesystem", Type: TypeStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}},
				{Name: "github", Type: TypeStdio, Command: "docker", Args: []string{"run", "-i", "--rm", "images.example/github-mcp-server"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "t0k"}},
			},
		},
		{
			name: ".mcp.json",
			file: "/work/project/.mcp.json",
			data: `{"mcpServers": {
				"z-local": {"type": "stdio", "command": "./bin/server", "args": [], "env": {}, "cwd": "tools"},
				"api": {"type": "http", "url": "https://api.example.test:${PORT}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
				"events": {"type": "sse", "url": "http://127.0.0.1:${PORT:-9000}/sse"},
				"0abc": {"command": "x"}
			}}`,
			want: []Config{
				{Name: "0abc", Type: TypeStdio, Command: "x"},
				{Name: "api", Type: TypeHTTP, URL: "https://api.example.test:8080/mcp", Headers: map[string]string{"Authorization": "Bearer t0k"}},
				{Name: "events", Type: TypeSSE, URL: "http://127.0.0.1:8080/sse"},
				{Name: "z-local", Type: TypeStdio, Command: "./bin/server", Cwd: "/work/project/tools"},
			},
		},
		{
			name: "expansion everywhere",
			file: "/f/servers.json",
			data: `{"mcpServers": {"s": {
				"command": "${HOME}/bin/srv",
				"args": ["--token=${TOKEN}", "${MISSING:-fallback}", "${MISSING:-}", "${EMPTY:-notused}", "$HOME", "${TOKEN}${TOKEN}"],
				"env": {"A": "${TOKEN}", "B": "x${MISSING:-y}z"},
				"cwd": "${HOME}/work"
			}}}`,
			want: []Config{{
				Name: "s", Type: TypeStdio, Command: "/home/me/bin/srv",
				Args: []string{"--token=t0k", "fallback", "", "", "$HOME", "t0kt0k"},
				Env:  map[string]string{"A": "t0k", "B": "xyz"},
				Cwd:  "/home/me/work",
			}},
		},
		{
			name: "relative cwd with dots",
			file: "conf/servers.json",
			data: `{"mcpServers": {"s": {"command": "c", "cwd": "../srv"}}}`,
			want: []Config{{Name: "s", Type: TypeStdio, Command: "c", Cwd: "srv"}},
		},
		{
			name: "inheritEnv",
			file: "f.json",
			data: `{"mcpServers": {"a": {"command": "c", "inheritEnv": ["AWS_*", "KUBECONFIG"]}, "b": {"command": "c", "inheritEnv": true},
				"c": {"command": "c", "inheritEnv": false}, "d": {"command": "c", "inheritEnv": ["*", "X"]}, "e": {"command": "c", "inheritEnv": []}}}`,
			want: []Config{
				{Name: "a", Type: TypeStdio, Command: "c", InheritEnv: []string{"AWS_*", "KUBECONFIG"}},
				{Name: "b", Type: TypeStdio, Command: "c", InheritAll: true},
				{Name: "c", Type: TypeStdio, Command: "c"},
				{Name: "d", Type: TypeStdio, Command: "c", InheritEnv: []string{"X"}, InheritAll: true},
				{Name: "e", Type: TypeStdio, Command: "c"},
			},
		},
		{
			name: "no servers",
			file: "f.json",
			data: `{"mcpServers": {}}`,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServers(tt.file, []byte(tt.data), testVars)
			if err != nil {
				t.Fatalf("ParseServers: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseServers =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestParseServersErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string // each must appear in the error
	}{
		{"not JSON", "{\n  \"mcpServers\": {,}\n}", []string{"servers.json: not a JSON object", "line 2, column 18"}},
		{"array", `[]`, []string{"servers.json: not a JSON object"}},
		{"no mcpServers", `{"servers": {}}`, []string{`servers.json: no "mcpServers" object`}},
		{"mcpServers array", `{"mcpServers": []}`, []string{`servers.json: "mcpServers" must be an object`}},
		{"mcpServers null", `{"mcpServers": null}`, []string{`servers.json: "mcpServers" must be an object`}},
		{"entry not an object", `{"mcpServers": {"s": "npx"}}`, []string{`servers.json: server "s"`, "expected an object"}},
		{"unknown key", `{"mcpServers": {"gh": {"command": "x", "comand": "y"}}}`, []string{`servers.json: server "gh"`, `unknown field "comand"`}},
		{"args not array", `{"mcpServers": {"s": {"command": "x", "args": "-y"}}}`, []string{`servers.json: server "s"`, `"args" has a string where a []string was expected`}},
		{"args of numbers", `{"mcpServers": {"s": {"command": "x", "args": [1]}}}`, []string{`server "s"`, "args", "number"}},
		{"env value not string", `{"mcpServers": {"s": {"command": "x", "env": {"DEBUG": true}}}}`, []string{`server "s"`, "env", "bool", "string"}},
		{"command not string", `{"mcpServers": {"s": {"command": ["x"]}}}`, []string{`server "s"`, "command", "array"}},
		{"stdio without command", `{"mcpServers": {"s": {"args": ["x"]}}}`, []string{`servers.json: server "s": a stdio server needs a non-empty "command"`}},
		{"blank command", `{"mcpServers": {"s": {"command": "  "}}}`, []string{`a stdio server needs a non-empty "command"`}},
		{"command expanding to nothing", `{"mcpServers": {"s": {"command": "${EMPTY:-}"}}}`, []string{`"command" "${EMPTY:-}" expands to nothing`}},
		{"entry a string", `{"mcpServers": {"s": "npx"}}`, []string{`the entry is a string; expected an object`}},
		{"stdio with url", `{"mcpServers": {"s": {"command": "x", "url": "http://h"}}}`, []string{`server "s": "url" and "headers" belong to http and sse servers`}},
		{"http without url", `{"mcpServers": {"s": {"type": "http"}}}`, []string{`server "s": an http server needs a "url"`}},
		{"sse with empty url", `{"mcpServers": {"s": {"type": "sse", "url": ""}}}`, []string{`an sse server needs a "url"`}},
		{"http with command", `{"mcpServers": {"s": {"type": "http", "url": "http://h", "command": "x"}}}`, []string{`server "s": "command", "args", "env", "inheritEnv" and "cwd" belong to stdio servers, not http`}},
		{"http with inheritEnv", `{"mcpServers": {"s": {"type": "http", "url": "http://h", "inheritEnv": true}}}`, []string{`server "s": "command", "args", "env", "inheritEnv" and "cwd" belong to stdio servers`}},
		{"inheritEnv string", `{"mcpServers": {"s": {"command": "x", "inheritEnv": "AWS_*"}}}`, []string{`servers.json: server "s": "inheritEnv" is a string; expected true, false or a list`}},
		{"inheritEnv number", `{"mcpServers": {"s": {"command": "x", "inheritEnv": 1}}}`, []string{`server "s": "inheritEnv" is a number`}},
		{"inheritEnv null", `{"mcpServers": {"s": {"command": "x", "inheritEnv": null}}}`, []string{`server "s": "inheritEnv" is null`}},
		{"inheritEnv object", `{"mcpServers": {"s": {"command": "x", "inheritEnv": {"A": true}}}}`, []string{`server "s": "inheritEnv" is an object`}},
		{"inheritEnv item not string", `{"mcpServers": {"s": {"command": "x", "inheritEnv": ["A", true]}}}`, []string{`server "s": inheritEnv[1] is a boolean`}},
		{"inheritEnv bad glob", `{"mcpServers": {"s": {"command": "x", "inheritEnv": ["AWS_[*"]}}}`, []string{`server "s": inheritEnv[0] "AWS_[*" is a malformed glob`}},
		{"inheritEnv blank", `{"mcpServers": {"s": {"command": "x", "inheritEnv": [""]}}}`, []string{`server "s": inheritEnv[0] "" is an empty pattern`}},
		{"inheritEnv with space", `{"mcpServers": {"s": {"command": "x", "inheritEnv": ["AWS_* "]}}}`, []string{`server "s": inheritEnv[0] "AWS_* " is a pattern with '=', whitespace`}},
		{"unknown type", `{"mcpServers": {"s": {"type": "websocket", "url": "ws://h"}}}`, []string{`"type" is "websocket"; expected "stdio", "http" or "sse"`}},
		{"bad key", `{"mcpServers": {"My_Server": {"command": "x"}}}`, []string{`server "My_Server": the key must match`, `e.g. "my-server"`}},
		{"bad key all symbols", `{"mcpServers": {"__": {"command": "x"}}}`, []string{`server "__"`, `e.g. "server"`}},
		{"bad key leading dash", `{"mcpServers": {"-a": {"command": "x"}}}`, []string{`server "-a"`, `e.g. "a"`}},
		{"unset var", `{"mcpServers": {"s": {"command": "${NOPE}"}}}`, []string{`server "s": command: ${NOPE} is not set and has no default`, "${NOPE:-default}"}},
		{"unset var in args", `{"mcpServers": {"s": {"command": "x", "args": ["a", "${NOPE}"]}}}`, []string{`server "s": args[1]: ${NOPE} is not set`}},
		{"unset var in env", `{"mcpServers": {"s": {"command": "x", "env": {"K": "${NOPE}"}}}}`, []string{`server "s": env.K: ${NOPE} is not set`}},
		{"unset var in cwd", `{"mcpServers": {"s": {"command": "x", "cwd": "${NOPE}"}}}`, []string{`server "s": cwd: ${NOPE} is not set`}},
		{"unset var in url", `{"mcpServers": {"s": {"type": "http", "url": "${NOPE}"}}}`, []string{`server "s": url: ${NOPE} is not set`}},
		{"unset var in headers", `{"mcpServers": {"s": {"type": "http", "url": "u", "headers": {"H": "${NOPE}"}}}}`, []string{`server "s": headers.H: ${NOPE} is not set`}},
		{"unterminated var", `{"mcpServers": {"s": {"command": "${HOME"}}}`, []string{`unterminated ${`}},
		{"bad var name", `{"mcpServers": {"s": {"command": "${1X}"}}}`, []string{`"1X" is not a variable name`}},
		{"empty var name", `{"mcpServers": {"s": {"command": "${:-x}"}}}`, []string{`"" is not a variable name`}},
		{"bad env name", `{"mcpServers": {"s": {"command": "x", "env": {"A=B": "1"}}}}`, []string{`env: "A=B" is not a valid variable name`}},
		{"empty env name", `{"mcpServers": {"s": {"command": "x", "env": {"": "1"}}}}`, []string{`env: "" is not a valid variable name`}},
		// Read as the last occurrence here and by Node hosts, as the first
		// by whoever reviews the file.
		{"server twice", "{\"mcpServers\": {\"s\": {\"command\": \"x\"},\n \"s\": {\"command\": \"y\"}}}", []string{`servers.json: line 2, column 2: duplicate key "s" in the object at /mcpServers`, "each key once"}},
		{"inheritEnv twice", `{"mcpServers": {"s": {"command": "x", "inheritEnv": false, "inheritEnv": true}}}`, []string{`duplicate key "inheritEnv" in the object at /mcpServers/s`}},
		{"disabled twice", `{"mcpServers": {"s": {"command": "x", "disabled": true, "disabled": false}}}`, []string{`duplicate key "disabled"`}},
		{"env twice", `{"mcpServers": {"s": {"command": "x", "env": {"A": "1"}, "env": {"B": "2"}}}}`, []string{`duplicate key "env"`}},
		{"env name twice", `{"mcpServers": {"s": {"command": "x", "env": {"TOKEN": "1", "TOKEN": "2"}}}}`, []string{`duplicate key "TOKEN" in the object at /mcpServers/s/env`}},
		// Env names in two cases are two variables outside Windows
		// (TestServersEnvNamesInTwoCases); a server's keys, and headers,
		// are not.
		{"server key in two cases", `{"mcpServers": {"s": {"command": "x", "inheritEnv": false, "InheritEnv": true}}}`, []string{`keys "inheritEnv" and "InheritEnv" differ only in case, in the object at /mcpServers/s`}},
		{"header name in two cases", `{"mcpServers": {"s": {"type": "http", "url": "u", "headers": {"X-Token": "1", "x-token": "2"}}}}`, []string{`keys "X-Token" and "x-token" differ only in case, in the object at /mcpServers/s/headers`}},
		{"case and exact further in", `{"mcpServers": {"s": {"command": "x", "env": {"HTTP_PROXY": "1", "http_proxy": "2"}}, "t": {"command": "x", "disabled": true, "Disabled": false}}}`, []string{`keys "disabled" and "Disabled" differ only in case, in the object at /mcpServers/t`}},
		{"mcpServers twice", `{"mcpServers": {"s": {"command": "x"}}, "mcpServers": {"t": {"command": "y"}}}`, []string{`duplicate key "mcpServers"`}},
		{
			"all errors together",
			`{"mcpServers": {"b": {"command": "x", "bogus": 1}, "a": {"type": "http"}, "ok": {"command": "x"}, "c": {"command": "${NOPE}", "url": "u"}}}`,
			[]string{`server "a": an http server needs a "url"`, `server "b"`, `unknown field "bogus"`, `server "c": command: ${NOPE}`, `server "c": "url" and "headers"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServers("servers.json", []byte(tt.data), testVars)
			if err == nil {
				t.Fatalf("ParseServers = %+v, nil; want an error", got)
			}
			if got != nil {
				t.Errorf("ParseServers returned servers with an error: %+v", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), `"ok"`) {
				t.Errorf("error %q mentions a valid server", err)
			}
		})
	}
}

func TestParseServersErrorsSorted(t *testing.T) {
	_, err := ParseServers("f.json", []byte(`{"mcpServers": {"zz": {}, "aa": {}, "mm": {}}}`), testVars)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	a, m, z := strings.Index(msg, `"aa"`), strings.Index(msg, `"mm"`), strings.Index(msg, `"zz"`)
	if a < 0 || m < 0 || z < 0 || !(a < m && m < z) {
		t.Errorf("errors not reported for every server in order: %q", msg)
	}
}

func TestLoadServers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"s": {"command": "c", "cwd": "sub"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadServers(path, testVars)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Cwd != filepath.Join(dir, "sub") {
		t.Errorf("LoadServers = %+v; want cwd resolved against %s", got, dir)
	}
	if _, err := LoadServers(filepath.Join(dir, "missing.json"), testVars); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadServers of a missing file = %v; want an error naming it", err)
	}
}

func TestExpandVars(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"$TOKEN ${", "", "unterminated"},
		{"a${TOKEN}b${HOME}c", "at0kb/home/mec", ""},
		{"${TOKEN:-x:-y}", "t0k", ""},
		{"${MISSING:-x:-y}", "x:-y", ""},
		{"${MISSING:-${TOKEN}", "${TOKEN", ""}, // no nesting: the default ends at the first '}'
		{"${}", "", "not a variable name"},
		{"${A B}", "", "not a variable name"},
	}
	for _, tt := range tests {
		got, err := expandVars(tt.in, testVars)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("expandVars(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("expandVars(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
		}
	}
}

// FuzzParseServers checks that no servers file makes ParseServers panic, and
// that what it accepts is well-formed.
func FuzzParseServers(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["${TOKEN}"], "env": {"K": "${NOPE:-d}"}, "cwd": "rel"}}}`,
		`{"mcpServers": {"h": {"type": "http", "url": "http://h/${PORT}", "headers": {"A": "b"}}}}`,
		`{"mcpServers": {"Bad_Key": {"type": "sse"}}, "other": 1}`,
		`{"mcpServers": {"s": {"command": "${", "bogus": []}}}`,
		`{"mcpServers": null}`,
		`{"mcpServers": {"i": {"command": "x", "inheritEnv": ["AWS_*", "K[AB]", "*"]}, "j": {"command": "x", "inheritEnv": true}}}`,
		`{"mcpServers": {"i": {"command": "x", "inheritEnv": [1, "[", ""]}, "h": {"type": "http", "url": "u", "inheritEnv": false}}}`,
		`[]`,
		`{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		got, err := ParseServers("fuzz.json", []byte(data), testVars)
		if err != nil {
			if got != nil {
				t.Fatalf("servers and an error: %+v, %v", got, err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !slices.IsSortedFunc(got, func(a, b Config) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatalf("not sorted: %+v", got)
		}
		for _, c := range got {
			if !ServerKeyPattern.MatchString(c.Name) {
				t.Fatalf("accepted key %q", c.Name)
			}
			for _, p := range c.InheritEnv {
				if why := ValidInheritPattern(p); why != "" || p == "*" {
					t.Fatalf("accepted inheritEnv pattern %q: %s", p, why)
				}
			}
			switch c.Type {
			case TypeStdio:
				if strings.TrimSpace(c.Command) == "" && !strings.Contains(data, "${") {
					t.Fatalf("stdio server %q without a command", c.Name)
				}
			case TypeHTTP, TypeSSE:
				if c.Command != "" || c.Args != nil || c.Env != nil || c.Cwd != "" || c.InheritEnv != nil || c.InheritAll {
					t.Fatalf("%s server %q with stdio fields: %+v", c.Type, c.Name, c)
				}
			default:
				t.Fatalf("accepted type %q", c.Type)
			}
		}
	})
}

// A server's env with HTTP_PROXY and http_proxy (each read by its own
// programs, and set side by side in many a proxied environment): two
// variables outside Windows, both set for the server. Refusing them as
// keys that differ only in case refused the whole servers file, every
// server with it, once install had moved such a server from the host's
// configuration.
func TestServersEnvNamesInTwoCases(t *testing.T) {
	data := `{"mcpServers": {"s": {"command": "x", "env": {"HTTP_PROXY": "http://p:3128", "http_proxy": "http://p:3128"}}}}`
	got, err := ParseServers("servers.json", []byte(data), testVars)
	if runtime.GOOS == "windows" {
		if err == nil || !strings.Contains(err.Error(), "differ only in case") {
			t.Fatalf("on Windows, whose environment is case-insensitive: %v; want the names refused", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("ParseServers: %v", err)
	}
	if len(got) != 1 || got[0].Env["HTTP_PROXY"] == "" || got[0].Env["http_proxy"] == "" {
		t.Fatalf("ParseServers = %+v; want both variables", got)
	}
}
