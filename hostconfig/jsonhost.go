package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// jsonFile is a host's JSON config being edited.
type jsonFile struct {
	path   string
	before []byte // nil when absent
	tree   *Node
	style  jsonStyle
}

func loadJSONFile(path string) (*jsonFile, error) {
	f := &jsonFile{path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.tree = NewObject()
		f.style = jsonStyle{indent: "  ", newline: false}
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f.before = data
	f.style = styleOf(data)
	if f.tree, err = parseObject(path, data); err != nil {
		return nil, err
	}
	return f, nil
}

// edit is the file's edit for the plan, or none when its bytes would not
// change.
func (f *jsonFile) edit(p *Plan) {
	after := f.tree.Encode(f.style.indent, f.style.newline)
	if f.before != nil && string(after) == string(f.before) {
		return
	}
	if f.before == nil && len(f.tree.Keys) == 0 {
		return
	}
	p.Edits = append(p.Edits, FileEdit{Path: f.path, Before: f.before, After: after})
}

// lookup follows path through objects; nil when a step is missing or not
// an object.
func lookup(n *Node, path []string) *Node {
	for _, k := range path {
		n = n.Get(k)
		if n == nil || n.Kind != '{' {
			return nil
		}
	}
	return n
}

// ensure follows path, creating missing objects.
func ensure(n *Node, path []string) (*Node, error) {
	for i, k := range path {
		c := n.Get(k)
		if c == nil {
			c = NewObject()
			n.Set(k, c)
		}
		if c.Kind != '{' {
			return nil, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		n = c
	}
	return n, nil
}

// gateArgs are the arguments the host starts the gate with.
func gateArgs(o Options) []string {
	args := []string{"serve", "--name", o.Name, "--servers", o.Servers}
	if o.Policy != "" {
		args = append(args, "--policy", o.Policy)
	}
	return args
}

// looksLikeGate says whether a host entry starts an mcp-gate: such an entry
// is never moved behind the gate (a gate behind a gate).
func looksLikeGate(o Options, command string, args []string) bool {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	return (command == o.Command || base == "mcp-gate") && slices.Contains(args, "serve")
}

// convertJSONEntry turns a Claude Code or Claude Desktop server entry into
// a servers-file entry. The keys both hosts document are carried in their
// order; any other key is refused, since dropping it could change what the
// server does. inheritAll marks a host that gives its servers its whole
// environment (Claude Code), which the moved server keeps. project is the
// directory of a server registered for one project only ("" for one
// registered for every session): see projectCwd.
func convertJSONEntry(where, name string, e *Node, inheritAll bool, project string) (*Node, error) {
	if e.Kind != '{' {
		return nil, fmt.Errorf("%s: server %q is not an object", where, name)
	}
	out := NewObject()
	stdio := true
	for i, k := range e.Keys {
		v := e.Vals[i]
		switch k {
		case "type":
			t := v.String()
			if t != "stdio" && t != "http" && t != "sse" {
				return nil, fmt.Errorf("%s: server %q has type %s; expected stdio, http or sse", where, name, v.Compact())
			}
			stdio = t == "stdio"
		case "command", "args", "env", "url", "headers", "cwd":
		default:
			return nil, fmt.Errorf("%s: server %q has %q, which the gate's servers file cannot express; remove it or move this server by hand", where, name, k)
		}
		out.Set(k, v.Clone())
	}
	if stdio && out.Get("command") == nil {
		return nil, fmt.Errorf("%s: server %q has neither command nor url", where, name)
	}
	if stdio && project != "" {
		if err := projectCwd(where, name, out, project); err != nil {
			return nil, err
		}
	}
	if stdio && inheritAll {
		out.Set("inheritEnv", Leaf(true))
	}
	// Claude Code expands ${VAR} in its entries as the servers file does;
	// Claude Desktop passes them literally, and the servers file would
	// expand what the host did not.
	if !inheritAll && strings.Contains(e.Compact(), "${") {
		return nil, fmt.Errorf("%s: server %q has \"${\" in a value, which this host passes literally and the gate's servers file would expand; move this server by hand", where, name)
	}
	return out, nil
}

// projectCwd pins the working directory of a server registered for one
// project to that project. The host starts such a server only in that
// project's sessions, in the session's directory, so a relative command or
// argument ("python server.py", "node ./build/index.js") names the
// project's file; behind the gate it is in the servers file every session
// of every project uses, and the gate would run whatever file of that name
// the repository the user opens next holds. An absent cwd becomes the
// project directory, a relative one is resolved against it.
func projectCwd(where, name string, out *Node, project string) error {
	cwd := project
	if c := out.Get("cwd"); c != nil {
		s := c.String()
		if c.Kind != 0 || len(c.Raw) == 0 || c.Raw[0] != '"' {
			return fmt.Errorf("%s: server %q has a cwd that is not a string", where, name)
		}
		if filepath.IsAbs(s) || strings.Contains(s, "${") {
			return nil
		}
		cwd = filepath.Join(project, s)
	}
	out.Set("cwd", Leaf(cwd))
	return nil
}

// moveJSONServers moves every server of the object at path in f into the
// servers file, leaving an entry equal to the gate alone.
func moveJSONServers(o Options, p *Plan, sf *serversFile, f *jsonFile, path []string, where string, gate *Node, inheritAll bool, project string) error {
	obj := lookup(f.tree, path)
	if obj == nil {
		return nil
	}
	for _, name := range slices.Clone(obj.Keys) {
		e := obj.Get(name)
		if name == o.Name && e.Equal(gate) {
			continue
		}
		args, _ := e.Get("args").Strings()
		if looksLikeGate(o, e.Get("command").String(), args) {
			return fmt.Errorf("%s: %q already starts mcp-gate with other settings; run \"mcp-gate uninstall\" or remove it first", where, name)
		}
		conv, err := convertJSONEntry(where, name, e, inheritAll, project)
		if err != nil {
			return err
		}
		key, err := sf.add(p, o.Name, name, conv)
		if err != nil {
			return err
		}
		idx := obj.Index(name)
		p.state.Moved = append(p.state.Moved, Record{File: f.path, Path: path, Name: name, Value: e.Compact(), Index: idx})
		obj.Delete(name)
		p.Moved = append(p.Moved, fmt.Sprintf("%s (%s) -> %s", name, where, key))
		if inheritAll && conv.Get("command") != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("server %q keeps the whole environment the host gave it (\"inheritEnv\": true in the servers file); narrow it to the names it needs", key))
		}
	}
	return nil
}

// registerJSONGate puts the gate's entry at path.
func registerJSONGate(o Options, p *Plan, f *jsonFile, path []string, gate *Node) error {
	obj, err := ensure(f.tree, path)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if cur := obj.Get(o.Name); cur != nil && cur.Equal(gate) {
		return nil
	}
	obj.Set(o.Name, gate)
	p.state.Gate = append(p.state.Gate, Record{File: f.path, Path: path, Name: o.Name, Value: gate.Compact()})
	return nil
}

func planClaudeDesktop(o Options, p *Plan, sf *serversFile) error {
	path := ClaudeDesktopConfigPath(o)
	f, err := loadJSONFile(path)
	if err != nil {
		return err
	}
	gate, _ := FromValue(map[string]any{"command": o.Command, "args": gateArgs(o)})
	gate = reorder(gate, "command", "args")
	if err := moveJSONServers(o, p, sf, f, []string{"mcpServers"}, path, gate, false, ""); err != nil {
		return err
	}
	if err := registerJSONGate(o, p, f, []string{"mcpServers"}, gate); err != nil {
		return err
	}
	f.edit(p)
	return nil
}

// ClaudeDesktopConfigPath is where Claude Desktop keeps its config on
// o.GOOS: the documented macOS and Windows paths, and the path unofficial
// Linux builds use.
func ClaudeDesktopConfigPath(o Options) string {
	switch o.GOOS {
	case "darwin":
		return filepath.Join(o.Home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	case "windows":
		appData := o.getenv("APPDATA")
		if appData == "" {
			appData = filepath.Join(o.Home, "AppData", "Roaming")
		}
		return filepath.Join(appData, "Claude", "claude_desktop_config.json")
	default:
		base := o.getenv("XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(o.Home, ".config")
		}
		return filepath.Join(base, "Claude", "claude_desktop_config.json")
	}
}

// reorder puts keys first, in that order (FromValue sorts map keys).
func reorder(n *Node, keys ...string) *Node {
	out := NewObject()
	for _, k := range keys {
		if v := n.Get(k); v != nil {
			out.Set(k, v)
		}
	}
	for i, k := range n.Keys {
		if out.Get(k) == nil {
			out.Set(k, n.Vals[i])
		}
	}
	return out
}
