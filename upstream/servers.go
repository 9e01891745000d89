package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Transport types of a server entry.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// Config is one entry of the servers file.
type Config struct {
	Name    string            // the key in mcpServers
	Type    string            // TypeStdio, TypeHTTP or TypeSSE
	Command string            // stdio: the program to run
	Args    []string          // stdio: its arguments
	Env     map[string]string // stdio: variables set for the child, on top of the allowlisted environment
	// InheritEnv (stdio) names more of the gate's variables the child gets:
	// names or globs. InheritAll is `"inheritEnv": true`: all of them.
	InheritEnv []string
	InheritAll bool
	Cwd        string            // stdio: working directory (absolute; a relative one is resolved against the servers file)
	URL        string            // http, sse
	Headers    map[string]string // http, sse
	// CallTimeout bounds one call forwarded to the server ("callTimeout";
	// DefaultCallTimeout when zero): calltimeout.go.
	CallTimeout time.Duration
	// Shared (`"shared": true`) says the server keeps nothing of one user
	// that another could see (no login, no per-user files or cache), so
	// one child may serve every user of the same upstream-facing
	// capabilities. By default each identity gets children of its own.
	Shared bool
	// Protocol pins the revision the gate speaks to the server
	// ("protocol"): ModernVersion, ProtocolAuto to probe, or "" for the
	// older era (era.go).
	Protocol string
}

// ServerKeyPattern is what a server key must look like. No '_', so a wire
// name <server>__<tool> is never ambiguous; no ':', so a policy name
// mcp:<server>:<tool> is not either (DESIGN.md §3).
var ServerKeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// entry is the on-disk form of a server. Pointers tell "absent" from "empty".
type entry struct {
	Type    *string           `json:"type"`
	Command *string           `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     *string           `json:"cwd"`
	// InheritEnv is true, false or a list of names and globs.
	InheritEnv json.RawMessage   `json:"inheritEnv"`
	URL        *string           `json:"url"`
	Headers    map[string]string `json:"headers"`
	// CallTimeout is a Go duration string (parseCallTimeout).
	CallTimeout json.RawMessage `json:"callTimeout"`
	Shared      *bool           `json:"shared"`
	// Protocol is a revision string (parseProtocol).
	Protocol json.RawMessage `json:"protocol"`
}

// LoadServers reads and validates a servers file. lookupEnv resolves
// ${VAR} references (os.LookupEnv in production).
func LoadServers(path string, lookupEnv func(string) (string, bool)) ([]Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading servers file: %w", err)
	}
	return ParseServers(path, data, lookupEnv)
}

// ParseServers validates the mcpServers JSON that Claude Desktop's config and
// Claude Code's .mcp.json use. Within each server entry every key must be
// known and every value well-typed; all problems are reported together, each
// naming the file and the server. Other top-level keys (a desktop config has
// many) are ignored, and so are, within an entry, the keys other hosts
// carry (CheckServers reports them). The result is sorted by server key;
// disabled entries are left out.
func ParseServers(filename string, data []byte, lookupEnv func(string) (string, bool)) ([]Config, error) {
	r, err := CheckServers(filename, data, lookupEnv)
	if err != nil {
		return nil, err
	}
	if len(r.Errors) > 0 {
		return nil, errors.Join(r.Errors...)
	}
	return r.Servers, nil
}

func parseEntry(filename, name string, raw json.RawMessage, lookupEnv func(string) (string, bool)) (Config, error) {
	where := fmt.Sprintf("%s: server %q", filename, name)
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}
	if !ServerKeyPattern.MatchString(name) {
		bad("the key must match %s (lowercase letters, digits and '-'); rename it, e.g. %q", ServerKeyPattern, suggestKey(name))
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		bad("the entry is %s; expected an object with type, command, args, env, inheritEnv, cwd (stdio) or url, headers (http, sse), and shared", jsonKind(t))
		return Config{}, errors.Join(errs...)
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		bad("%v; expected an object with type, command, args, env, inheritEnv, cwd (stdio) or url, headers (http, sse), and shared", describeJSONError(raw, err))
		return Config{}, errors.Join(errs...)
	}
	cfg := Config{Name: name, Type: TypeStdio}
	if e.Shared != nil {
		cfg.Shared = *e.Shared
	}
	if e.Type != nil {
		cfg.Type = *e.Type
	}
	expand := func(field, s string) string {
		v, err := expandVars(s, lookupEnv)
		if err != nil {
			bad("%s: %v", field, err)
		}
		return v
	}
	switch cfg.Type {
	case TypeStdio:
		if e.Command == nil || strings.TrimSpace(*e.Command) == "" {
			bad(`a stdio server needs a non-empty "command"`)
		} else if cfg.Command = expand("command", *e.Command); strings.TrimSpace(cfg.Command) == "" && strings.Contains(*e.Command, "${") {
			bad(`"command" %q expands to nothing`, *e.Command)
		}
		if e.URL != nil || e.Headers != nil {
			bad(`"url" and "headers" belong to http and sse servers, not stdio`)
		}
		for i, a := range e.Args {
			cfg.Args = append(cfg.Args, expand(fmt.Sprintf("args[%d]", i), a))
		}
		if len(e.Env) > 0 {
			cfg.Env = make(map[string]string, len(e.Env))
			for k, v := range e.Env {
				if k == "" || strings.ContainsAny(k, "=\x00") {
					bad("env: %q is not a valid variable name", k)
					continue
				}
				cfg.Env[k] = expand("env."+k, v)
			}
		}
		cfg.InheritEnv, cfg.InheritAll = parseInheritEnv(e.InheritEnv, bad)
		if e.Cwd != nil {
			cwd := expand("cwd", *e.Cwd)
			if cwd != "" && !filepath.IsAbs(cwd) {
				cwd = filepath.Join(filepath.Dir(filename), cwd)
			}
			cfg.Cwd = cwd
		}
	case TypeHTTP, TypeSSE:
		if e.URL == nil || *e.URL == "" {
			bad(`an %s server needs a "url"`, cfg.Type)
		} else {
			cfg.URL = expand("url", *e.URL)
		}
		if e.Command != nil || e.Args != nil || e.Env != nil || e.Cwd != nil || e.InheritEnv != nil {
			bad(`"command", "args", "env", "inheritEnv" and "cwd" belong to stdio servers, not %s`, cfg.Type)
		}
		if len(e.Headers) > 0 {
			cfg.Headers = make(map[string]string, len(e.Headers))
			for k, v := range e.Headers {
				cfg.Headers[k] = expand("headers."+k, v)
			}
		}
		if cfg.URL != "" {
			for _, err := range remoteProblems(cfg.URL, cfg.Headers) {
				bad("%v", err)
			}
		}
	default:
		bad(`"type" is %q; expected "stdio", "http" or "sse"`, cfg.Type)
	}
	cfg.CallTimeout = parseCallTimeout(e.CallTimeout, bad)
	cfg.Protocol = parseProtocol(e.Protocol, bad)
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// parseInheritEnv reads an entry's inheritEnv: true (the whole
// environment), false (nothing more), or a list of variable names and
// globs. Anything else is an error, as for every other key: a typo must not
// quietly hand a server the gate's secrets or quietly withhold what it
// needs.
func parseInheritEnv(raw json.RawMessage, bad func(string, ...any)) (patterns []string, all bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, false
	}
	const want = `expected true, false or a list of variable names and globs such as ["AWS_PROFILE", "NPM_CONFIG_*"]`
	switch t[0] {
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(t, &b); err != nil {
			bad(`"inheritEnv" is not a boolean; %s`, want)
			return nil, false
		}
		return nil, b
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(t, &list); err != nil {
			bad(`"inheritEnv" is not a valid list; %s`, want)
			return nil, false
		}
		for i, item := range list {
			var s string
			if len(item) == 0 || item[0] != '"' || json.Unmarshal(item, &s) != nil {
				bad(`inheritEnv[%d] is %s; %s`, i, jsonKind(item), want)
				continue
			}
			if why := ValidInheritPattern(s); why != "" {
				bad(`inheritEnv[%d] %q is %s`, i, s, why)
				continue
			}
			if rest := strings.Trim(s, "*"); len(rest) < len(s) && (rest == "" || rest == "?") {
				// "*", "**", "?*", "*?": every name, the same as true,
				// and warned about the same way.
				all = true
				continue
			}
			patterns = append(patterns, s)
		}
		return patterns, all
	}
	bad(`"inheritEnv" is %s; %s`, jsonKind(t), want)
	return nil, false
}

// expandVars resolves ${VAR} and ${VAR:-default}, as Claude Code does in
// .mcp.json, so a file shared through a repository keeps secrets out of it.
// A variable that is unset and has no default is an error: starting a server
// with an empty token would fail later and less clearly.
func expandVars(s string, lookupEnv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envNamePattern.MatchString(name) {
			return "", fmt.Errorf("${%s}: %q is not a variable name", ref, name)
		}
		v, ok := lookupEnv(name)
		switch {
		case ok:
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			return "", fmt.Errorf("${%s} is not set and has no default (write ${%s:-default} to give one)", name, name)
		}
		s = s[i+j+1:]
	}
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func suggestKey(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "server"
	}
	return s
}

// jsonKind names the kind of a JSON value for an error message.
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// describeJSONError adds a line and column to a syntax error.
func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%q has a %s where a %s was expected", te.Field, te.Value, te.Type)
	}
	return err
}

// position turns a SyntaxError's offset into a line and column. The offset
// counts the bytes read, the offending one included.
func position(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for i := 0; i < int(offset)-1 && i < len(data); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
