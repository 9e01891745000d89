package hostconfig

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/pelletier/go-toml/v2"
)

// CodexConfigPath is $CODEX_HOME/config.toml, else ~/.codex/config.toml.
func CodexConfigPath(o Options) string {
	dir := o.getenv("CODEX_HOME")
	if dir == "" {
		dir = filepath.Join(o.Home, ".codex")
	}
	return filepath.Join(dir, "config.toml")
}

// codexTimeoutMargin is what Codex's tool_timeout_sec allows beyond the
// approval timeout: Codex's own default for a whole call, so that a call
// approved at the last moment still has the time it had before the gate.
const codexTimeoutMargin = 60

// planCodex moves Codex's [mcp_servers.*] tables into the servers file and
// registers the gate as one table. No TOML library keeps comments and
// layout on a rewrite, so the file is edited as text: whole tables are cut
// out and the gate's table appended; the result is then parsed and must
// equal the intended document exactly, or nothing is written.
func planCodex(o Options, p *Plan, sf *serversFile) error {
	path := CodexConfigPath(o)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var before []byte
	if err == nil {
		before = data
	}
	doc := map[string]any{}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	servers := map[string]any{}
	if v, ok := doc["mcp_servers"]; ok {
		if servers, ok = v.(map[string]any); !ok {
			return fmt.Errorf("%s: mcp_servers is not a table", path)
		}
	}
	text := string(data)
	var envVars []string
	var existingGate map[string]any
	moved := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		e, ok := servers[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: mcp_servers.%s is not a table", path, name)
		}
		cmd, _ := e["command"].(string)
		if looksLikeGate(o, cmd, anyStrings(e["args"])) {
			if name != o.Name {
				return fmt.Errorf("%s: %q already starts mcp-gate; run \"mcp-gate uninstall codex\" or remove it first", path, name)
			}
			existingGate = e
			continue
		}
		if en, ok := e["enabled"].(bool); ok && !en {
			p.Notes = append(p.Notes, fmt.Sprintf("server %q is disabled (enabled = false) and stays where it is", name))
			continue
		}
		conv, vars, err := convertCodexEntry(path, name, e)
		if err != nil {
			return err
		}
		if sec, ok := e["startup_timeout_sec"]; ok {
			p.Notes = append(p.Notes, fmt.Sprintf("server %q: startup_timeout_sec = %v is not carried; the gate's serve --start-timeout applies", name, sec))
		}
		key, err := sf.add(p, o.Name, name, conv)
		if err != nil {
			return err
		}
		envVars = append(envVars, vars...)
		var cut string
		text, cut, err = cutTOMLTables(text, "mcp_servers", name)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		moved[name] = true
		p.state.Moved = append(p.state.Moved, Record{File: path, Path: []string{"mcp_servers"}, Name: name, Value: cut})
		p.Moved = append(p.Moved, fmt.Sprintf("%s -> %s", name, key))
	}
	if existingGate != nil {
		envVars = append(envVars, anyStrings(existingGate["env_vars"])...)
	}
	slices.Sort(envVars)
	envVars = slices.Compact(envVars)
	timeout := int64(o.Timeout.Seconds()) + codexTimeoutMargin
	block := codexGateTable(o, timeout, envVars)
	var want map[string]any
	if err := toml.Unmarshal([]byte(block), &want); err != nil {
		return fmt.Errorf("the gate's table does not parse: %w", err)
	}
	gate := want["mcp_servers"].(map[string]any)[o.Name].(map[string]any)
	switch {
	case existingGate == nil:
		trimmed := strings.TrimRight(text, "\n")
		if trimmed != "" {
			trimmed += "\n\n"
		}
		text = trimmed + block
		p.state.Gate = append(p.state.Gate, Record{File: path, Path: []string{"mcp_servers"}, Name: o.Name, Value: block})
	case !reflect.DeepEqual(existingGate, gate):
		return fmt.Errorf("%s: mcp_servers.%s is a gate registered with other settings than %s would write; run \"mcp-gate uninstall codex\" first", path, o.Name, "install")
	}

	// The check: the edited text parses to exactly the intended document.
	intended := maps.Clone(doc)
	ms := map[string]any{}
	for k, v := range servers {
		if !moved[k] {
			ms[k] = v
		}
	}
	ms[o.Name] = gate
	intended["mcp_servers"] = ms
	var got map[string]any
	if err := toml.Unmarshal([]byte(text), &got); err != nil {
		return fmt.Errorf("%s: editing it as text gave invalid TOML (%v); nothing was written: move its [mcp_servers] tables by hand", path, err)
	}
	if !reflect.DeepEqual(got, intended) {
		return fmt.Errorf("%s: this file's layout (inline or dotted mcp_servers tables?) cannot be edited safely as text; nothing was written: write each server as its own [mcp_servers.NAME] table, or move them by hand", path)
	}
	// A trusted project's .codex/config.toml is the project's file, and
	// Codex has no per-user way to turn one of its servers off (a user
	// entry with only enabled = false breaks Codex outside the project).
	for _, pp := range CodexProjectConfigs(o) {
		var pr HostReport
		scanCodexFile(o, &pr, pp, filepath.Dir(filepath.Dir(pp)))
		for _, d := range pr.Direct {
			p.Notes = append(p.Notes, fmt.Sprintf("%s registers %q directly: when Codex trusts this project, the model can call it without the policy; move it into the servers file and remove it there (install does not edit a project's file)", pp, d.Name))
		}
	}
	plugins, notes := CodexPluginServers(o)
	p.Notes = append(p.Notes, notes...)
	for _, s := range plugins {
		p.Notes = append(p.Notes, fmt.Sprintf("plugin %s (%s) registers %q beside the gate: the model can call it without the policy; %s", s.Plugin, s.File, s.Name, codexPluginFix(s)))
	}
	for _, sys := range CodexSystemConfigs(o) {
		var sr HostReport
		scanCodexFile(o, &sr, sys, "")
		for _, d := range sr.Direct {
			p.Notes = append(p.Notes, fmt.Sprintf("%s registers %q for every session, beside the gate: the model can call it without the policy; %s", sys, d.Name, codexSystemFix(sys)))
		}
	}
	if string(data) != text {
		p.Edits = append(p.Edits, FileEdit{Path: path, Before: before, After: []byte(text)})
	}
	return nil
}

// convertCodexEntry turns a Codex server table into a servers-file entry,
// and names the variables the gate itself must receive from Codex. Codex
// gives a stdio server its default environment plus the names in env_vars;
// the gate's allowlist covers the defaults and env_vars become inheritEnv.
func convertCodexEntry(path, name string, e map[string]any) (*Node, []string, error) {
	out := NewObject()
	var vars []string
	headers := NewObject()
	bad := func(format string, a ...any) (*Node, []string, error) {
		return nil, nil, fmt.Errorf("%s: mcp_servers.%s: %s", path, name, fmt.Sprintf(format, a...))
	}
	str := func(k string) (string, bool) { s, ok := e[k].(string); return s, ok }
	if url, ok := str("url"); ok {
		out.Set("type", Leaf("http"))
		out.Set("url", Leaf(url))
	} else if cmd, ok := str("command"); ok {
		out.Set("command", Leaf(cmd))
	} else {
		return bad("has neither command nor url")
	}
	for _, k := range slices.Sorted(maps.Keys(e)) {
		v := e[k]
		switch k {
		case "command", "url", "enabled", "startup_timeout_sec":
		case "args":
			args, ok := v.([]any)
			if !ok || len(anyStrings(v)) != len(args) {
				return bad("args is not a list of strings")
			}
			out.Set("args", Leaf(anyStrings(v)))
		case "env":
			m, ok := v.(map[string]any)
			if !ok {
				return bad("env is not a table")
			}
			env := map[string]string{}
			for ek, ev := range m {
				s, ok := ev.(string)
				if !ok {
					return bad("env.%s is not a string", ek)
				}
				env[ek] = s
			}
			out.Set("env", Leaf(env))
		case "env_vars":
			names := anyStrings(v)
			if l, ok := v.([]any); !ok || len(l) != len(names) {
				return bad("env_vars is not a list of names")
			}
			out.Set("inheritEnv", Leaf(names))
			vars = append(vars, names...)
		case "cwd":
			s, ok := v.(string)
			if !ok {
				return bad("cwd is not a string")
			}
			out.Set("cwd", Leaf(s))
		case "http_headers":
			m, ok := v.(map[string]any)
			if !ok {
				return bad("http_headers is not a table")
			}
			for _, hk := range slices.Sorted(maps.Keys(m)) {
				s, ok := m[hk].(string)
				if !ok {
					return bad("http_headers.%s is not a string", hk)
				}
				if strings.Contains(s, "${") {
					return bad("http_headers.%s has \"${\", which Codex passes literally and the gate's servers file would expand; move this server by hand", hk)
				}
				headers.Set(hk, Leaf(s))
			}
		case "env_http_headers":
			m, ok := v.(map[string]any)
			if !ok {
				return bad("env_http_headers is not a table")
			}
			for _, hk := range slices.Sorted(maps.Keys(m)) {
				s, ok := m[hk].(string)
				if !ok {
					return bad("env_http_headers.%s is not a string", hk)
				}
				headers.Set(hk, Leaf("${"+s+"}"))
				vars = append(vars, s)
			}
		case "bearer_token_env_var":
			s, ok := v.(string)
			if !ok {
				return bad("bearer_token_env_var is not a string")
			}
			headers.Set("Authorization", Leaf("Bearer ${"+s+"}"))
			vars = append(vars, s)
		case "tool_timeout_sec":
			var sec float64
			switch n := v.(type) {
			case int64:
				sec = float64(n)
			case float64:
				sec = n
			default:
				return bad("tool_timeout_sec is not a number")
			}
			out.Set("callTimeout", Leaf(strconv.FormatFloat(sec, 'f', -1, 64)+"s"))
		default:
			return bad("has %q, which the gate's servers file cannot express (a tool filter belongs in the policy); remove it or move this server by hand", k)
		}
	}
	// Codex passes its values literally; the servers file expands ${VAR}.
	if literal := out.Compact(); strings.Contains(literal, "${") {
		return bad("has \"${\" in a value, which Codex passes literally and the gate's servers file would expand; move this server by hand")
	}
	if len(headers.Keys) > 0 {
		out.Set("headers", headers)
	}
	return out, vars, nil
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// codexGateTable is the gate's [mcp_servers.NAME] table.
func codexGateTable(o Options, timeout int64, envVars []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", o.Name)
	fmt.Fprintf(&b, "command = %s\n", tomlString(o.Command))
	fmt.Fprintf(&b, "args = %s\n", tomlStrings(gateArgs(o)))
	if len(envVars) > 0 {
		fmt.Fprintf(&b, "env_vars = %s\n", tomlStrings(envVars))
	}
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", timeout)
	return b.String()
}

func tomlStrings(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlString is a TOML basic string: only \" \\ and \uXXXX escapes.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || !unicode.IsPrint(r) && r > 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cutTOMLTables removes every table whose header key starts with
// prefix.name ([prefix.name], [prefix.name.env], ...), each with the blank
// lines after it, and returns the text and what it cut.
func cutTOMLTables(text, prefix, name string) (string, string, error) {
	lines := strings.SplitAfter(text, "\n")
	var keep, cut strings.Builder
	in := false
	// Comment lines just above the next header are that table's: they
	// stay, even when the table before them is cut.
	var lead []string
	flushLead := func(to *strings.Builder) {
		for _, l := range lead {
			to.WriteString(l)
		}
		lead = nil
	}
	for _, line := range lines {
		if key, ok := tomlHeader(line); ok {
			if in {
				flushLead(&keep)
			}
			in = len(key) >= 2 && key[0] == prefix && key[1] == name
		}
		if !in {
			keep.WriteString(line)
			continue
		}
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, "#"):
			lead = append(lead, line)
		case t == "" && len(lead) == 0:
			cut.WriteString(line)
		case t == "":
			lead = append(lead, line)
		default:
			flushLead(&cut)
			cut.WriteString(line)
		}
	}
	flushLead(&cut)
	return keep.String(), cut.String(), nil
}

// tomlHeader parses a table header line ([a.b] or [[a.b]]) into its keys.
func tomlHeader(line string) ([]string, bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "["), "[")
	var keys []string
	for {
		s = strings.TrimLeft(s, " \t")
		var k string
		switch {
		case strings.HasPrefix(s, `"`):
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, false
			}
			u, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return nil, false
			}
			k, s = u, s[end+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, false
			}
			k, s = s[1:end+1], s[end+2:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
			})
			if end <= 0 {
				return nil, false
			}
			k, s = s[:end], s[end:]
		}
		keys = append(keys, k)
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			continue
		}
		if strings.HasPrefix(s, "]") {
			return keys, true
		}
		return nil, false
	}
}

// CodexPluginServers are the MCP servers of the plugins Codex's merged
// config enables ([plugins."NAME@MARKETPLACE"], on unless enabled =
// false, in any layer of codexLayers: the pinned CLI starts a plugin's
// servers when the system config, the user's, a trusted project's or
// managed_config.toml enables it, and a higher layer's enabled = false
// turns it off), from every copy under $CODEX_HOME/plugins/cache: each
// copy's .mcp.json and its manifest's mcpServers (Codex reads
// .codex-plugin, .claude-plugin and .cursor-plugin manifests). Codex
// names them as declared. A project's file can turn a plugin on here but
// not off: Codex honours it only when it trusts the project, which the
// gate does not judge.
func CodexPluginServers(o Options) (servers []PluginServer, notes []string) {
	on := map[string]bool{}
	for _, l := range codexLayers(o) {
		plugins, _ := readCodexLayer(l.path)["plugins"].(map[string]any)
		for key, v := range plugins {
			t, _ := v.(map[string]any)
			en, set := t["enabled"].(bool)
			switch {
			case !set:
				if _, seen := on[key]; !seen {
					on[key] = true
				}
			case en || !l.project:
				on[key] = en
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(on)) {
		if !on[key] {
			continue
		}
		name, mp, ok := strings.Cut(key, "@")
		if !ok {
			continue
		}
		copies, _ := filepath.Glob(filepath.Join(filepath.Dir(CodexConfigPath(o)), "plugins", "cache", mp, name, "*"))
		seen := map[string]bool{}
		for _, dir := range copies {
			found, ns := pluginDirServers(key, dir, ".codex-plugin", ".claude-plugin", ".cursor-plugin")
			notes = append(notes, ns...)
			for _, s := range found {
				if !seen[s.Name] {
					seen[s.Name] = true
					servers = append(servers, s)
				}
			}
		}
	}
	return servers, notes
}

// codexPluginFix is what the user can do about a Codex plugin's server:
// Codex has no switch for one server of a plugin (a user table with only
// enabled = false fails Codex's config).
func codexPluginFix(s PluginServer) string {
	return fmt.Sprintf("Codex cannot turn off one server of a plugin, so install leaves it: move %q into the servers file by hand and turn the plugin off ([plugins.%s] enabled = false, or codex plugin remove), or keep it knowing the model calls it without the policy", s.Name, tomlString(s.Plugin))
}
