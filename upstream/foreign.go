package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// A Report is everything reading a servers file found: the entries that
// can be served, and what was wrong with the others. One bad entry leaves
// that server out and keeps the rest (a host shows the problem; see
// cmd/mcp-gate), so the problems are per entry rather than one refusal.
type Report struct {
	// Servers are the usable entries, sorted by key; disabled ones are left
	// out.
	Servers []Config
	// Disabled names the entries with "disabled": true.
	Disabled []string
	// Warnings are the keys other hosts' configs carry that the gate
	// accepts and ignores, one line each, naming the file and the server.
	Warnings []string
	// Errors are the refused entries, one error each, every problem of the
	// entry in it.
	Errors []error
}

// foreignKeys are keys other hosts write into a server entry (Claude
// Desktop, Cline, Roo, Windsurf, Cursor): accepted with a warning saying
// what the gate makes of them, so that a shared file works unchanged.
var foreignKeys = map[string]string{
	"disabled":      `the server is not started or listed while it is true`,
	"alwaysAllow":   `ignored: the policy decides every call, not a per-server approval list`,
	"autoApprove":   `ignored: the policy decides every call, not a per-server approval list`,
	"disabledTools": `ignored: deny the tools in the policy (deny: [mcp:SERVER:TOOL]) to hide and refuse them`,
	"timeout":       `ignored: the gate's own timeouts apply`,
	"description":   `ignored`,
	"transportType": `ignored: "type" says how the gate reaches the server (stdio by default)`,
}

// knownKeys are the keys of entry, read from its json tags, so that a key
// added there is known here without a second list to keep in step.
var knownKeys = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[entry]()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			m[tag] = true
		}
	}
	return m
}()

// ReadServers reads a servers file. The error is a file that cannot be
// read or is not a servers file at all (nothing in it can be served); a bad
// entry is in the Report.
func ReadServers(path string, lookupEnv func(string) (string, bool)) (Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Report{}, fmt.Errorf("reading servers file: %w", err)
	}
	return CheckServers(path, data, lookupEnv)
}

// CheckServers is ParseServers that keeps the good entries of a file with
// bad ones.
func CheckServers(filename string, data []byte, lookupEnv func(string) (string, bool)) (Report, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return Report{}, fmt.Errorf("%s: not a JSON object: %w", filename, describeJSONError(data, err))
	}
	// A key twice in one object (a server, its "env" or "inheritEnv", a
	// header), or two that differ only in case, is read as its last
	// occurrence here and by Node hosts, while whoever reviews the file
	// reads the first: the file must say one thing. Except the names in
	// a server's "env" outside Windows: there two names that differ in
	// case are two variables (HTTP_PROXY and http_proxy, each read by its
	// own programs), both set for the server.
	var ke *rawjson.KeyError
	if err := rawjson.UniqueKeysExact(data, envObject); errors.As(err, &ke) {
		line, col := position(data, int64(ke.Offset)+1)
		return Report{}, fmt.Errorf("%s: line %d, column %d: %w; a servers file must name each key once", filename, line, col, err)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return Report{}, fmt.Errorf(`%s: no "mcpServers" object; expected {"mcpServers": {"name": {"command": ...}}}`, filename)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil || servers == nil {
		return Report{}, fmt.Errorf(`%s: "mcpServers" must be an object mapping server names to entries`, filename)
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var r Report
	for _, name := range names {
		where := fmt.Sprintf("%s: server %q", filename, name)
		clean, disabled, warnings, errs := stripForeign(where, servers[name])
		r.Warnings = append(r.Warnings, warnings...)
		cfg, err := parseEntry(filename, name, clean, lookupEnv)
		if err != nil {
			errs = append(errs, err)
		}
		switch {
		case len(errs) > 0:
			r.Errors = append(r.Errors, errors.Join(errs...))
		case disabled:
			r.Disabled = append(r.Disabled, name)
		default:
			r.Servers = append(r.Servers, cfg)
		}
	}
	return r, nil
}

// stripForeign takes the keys other hosts carry out of an entry (warning
// about each once), and reports every key nobody knows at once, not just
// the first: a file written for another host often has several. What it
// returns is the entry with only the gate's own keys, for parseEntry. An
// entry that is not an object is returned as it is, for parseEntry to
// describe.
func stripForeign(where string, raw json.RawMessage) (clean json.RawMessage, disabled bool, warnings []string, errs []error) {
	var obj map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &obj) != nil {
		return raw, false, nil, nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var own []string
	for k := range knownKeys {
		own = append(own, k)
	}
	sort.Strings(own)
	for _, k := range keys {
		if knownKeys[k] {
			continue
		}
		what, foreign := foreignKeys[k]
		if !foreign {
			errs = append(errs, fmt.Errorf("%s: unknown field %q; expected %s (and, from other hosts' configs, %s)", where, k, strings.Join(own, ", "), strings.Join(foreignKeyNames(), ", ")))
			delete(obj, k)
			continue
		}
		if k == "disabled" {
			if err := json.Unmarshal(obj[k], &disabled); err != nil {
				errs = append(errs, fmt.Errorf(`%s: "disabled" is %s; expected true or false`, where, jsonKind(bytes.TrimSpace(obj[k]))))
				delete(obj, k)
				continue
			}
		}
		if k == "disabled" && disabled {
			delete(obj, k) // Report.Disabled says it, once
			continue
		}
		warnings = append(warnings, fmt.Sprintf("%s: %q is another host's key: %s", where, k, what))
		delete(obj, k)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return raw, disabled, warnings, append(errs, fmt.Errorf("%s: %w", where, err))
	}
	return b, disabled, warnings, errs
}

func foreignKeyNames() []string {
	out := make([]string, 0, len(foreignKeys))
	for k := range foreignKeys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// envObject says whether path is a server's "env" object, whose names are
// case-sensitive (outside Windows, whose environment is not).
func envObject(path []string) bool {
	return runtime.GOOS != "windows" && len(path) == 3 && path[0] == "mcpServers" && path[2] == "env"
}
