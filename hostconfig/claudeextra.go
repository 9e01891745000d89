package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Claude Code starts servers from more places than .claude.json and the
// projects' .mcp.json (as its 2.1.332 CLI reads them):
//
//   - plugins: each enabled plugin's .mcp.json and the mcpServers of its
//     .claude-plugin/plugin.json, named plugin:PLUGIN:SERVER. The files
//     are the plugin's (its cache, replaced by each update; commands name
//     ${CLAUDE_PLUGIN_ROOT}), so install does not move them: it turns
//     them off, for every project through deniedMcpServers in the user's
//     settings.json (which the CLI honours from user settings), for the
//     project through its disabledMcpServers in .claude.json.
//   - the administrator's managed-mcp.json, which, while it exists, takes
//     exclusive control: Claude Code starts its servers and none of the
//     user's, the gate included; and managedMcpServers in the managed
//     settings, which users cannot remove. Root owns both: install edits
//     neither, doctor reports them.
//   - --mcp-config, --plugin-dir and an SDK host's servers, given on the
//     command line: in no file at all (a limit, reported as a note).

// PluginServer is a server an enabled Claude Code plugin provides.
type PluginServer struct {
	Plugin string // the plugin's key in enabledPlugins: NAME@MARKETPLACE
	Name   string // the name the host gives it: plugin:NAME:SERVER
	File   string // the file that declares it
}

// ClaudeManagedDir is where Claude Code reads its administrator's files
// (managed-mcp.json, managed-settings.json): Options.ClaudeManagedDir, else
// the host OS's directory.
func ClaudeManagedDir(o Options) string {
	if o.ClaudeManagedDir != "" {
		return o.ClaudeManagedDir
	}
	switch o.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode"
	case "windows":
		return `C:\Program Files\ClaudeCode`
	}
	return "/etc/claude-code"
}

// ClaudeManagedMCPPath is the administrator's managed-mcp.json.
func ClaudeManagedMCPPath(o Options) string {
	return filepath.Join(ClaudeManagedDir(o), "managed-mcp.json")
}

// readTree is the JSON object at path, or nil when the file is absent,
// unreadable or not an object.
func readTree(path string) (*Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseObject(path, data)
}

// parseObject parses data, read from path, as a JSON object; an error
// names the file, and says so when the file has comments or trailing
// commas (JSONC), which no edit of it could keep.
func parseObject(path string, data []byte) (*Node, error) {
	tree, err := ParseTree(data)
	if err != nil {
		if hasJSONCSyntax(data) {
			return nil, fmt.Errorf("%s has comments or trailing commas, which are not JSON (%w): %s", path, err, jsoncAdvice(path))
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tree.Kind != '{' {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	return tree, nil
}

// claudeSettingsFiles are the settings files whose enabledPlugins apply to
// a session in o.Cwd, lowest first: the user's, the project's, the
// project's local one.
func claudeSettingsFiles(o Options) []string {
	out := []string{filepath.Join(claudeSettingsDir(o), "settings.json")}
	if o.Cwd != "" {
		out = append(out, filepath.Join(o.Cwd, ".claude", "settings.json"), filepath.Join(o.Cwd, ".claude", "settings.local.json"))
	}
	return out
}

// enabledClaudePlugins are the plugins enabledPlugins turns on for a
// session in o.Cwd, a later settings file overriding an earlier one.
func enabledClaudePlugins(o Options) []string {
	on := map[string]bool{}
	for _, path := range claudeSettingsFiles(o) {
		tree, err := readTree(path)
		if err != nil {
			continue
		}
		ep := tree.Get("enabledPlugins")
		if ep == nil || ep.Kind != '{' {
			continue
		}
		for i, k := range ep.Keys {
			v := ep.Vals[i]
			// true, or the older list form; false turns it off.
			on[k] = !(v.Kind == 0 && v.Compact() == "false")
		}
	}
	var out []string
	for k, v := range on {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ClaudePluginServers are the MCP servers Claude Code's enabled plugins
// provide in a session in o.Cwd: for each enabled plugin, every installed
// copy listed in plugins/installed_plugins.json, its .mcp.json and the
// mcpServers of its .claude-plugin/plugin.json (an object, a file, or a
// list of either). A declaration this cannot read (an MCPB bundle) is a
// note.
func ClaudePluginServers(o Options) (servers []PluginServer, notes []string) {
	return claudePluginServers(o, false)
}

// claudePluginServers is ClaudePluginServers, or with installed the
// servers of every plugin installed, enabled here or not: a project's
// .claude/settings.json enables a plugin for that project only (a plugin
// installed with --scope project is enabled there and nowhere else, and a
// repository's settings can turn on one the user left off), so what the
// settings of one directory enable is not what every project starts.
func claudePluginServers(o Options, installed bool) (servers []PluginServer, notes []string) {
	enabled := enabledClaudePlugins(o)
	if len(enabled) == 0 && !installed {
		return nil, nil
	}
	// The plugins directory (CLAUDE_CODE_PLUGIN_CACHE_DIR moves it) and
	// the seed directories (CLAUDE_CODE_PLUGIN_SEED_DIR, pre-installed
	// plugins) each list their installed copies.
	dirs := []string{filepath.Join(claudeSettingsDir(o), "plugins")}
	if d := o.getenv("CLAUDE_CODE_PLUGIN_CACHE_DIR"); d != "" {
		dirs[0] = d
	}
	for _, d := range filepath.SplitList(o.getenv("CLAUDE_CODE_PLUGIN_SEED_DIR")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	type registry struct {
		dir     string
		plugins *Node
	}
	var registries []registry
	for _, d := range dirs {
		reg := filepath.Join(d, "installed_plugins.json")
		tree, err := readTree(reg)
		if err != nil {
			if !os.IsNotExist(err) {
				which := "the plugins installed"
				if len(enabled) > 0 {
					which = "the plugins enabled (" + strings.Join(enabled, ", ") + ")"
				}
				notes = append(notes, fmt.Sprintf("%s cannot be read (%v): the MCP servers of %s are not known", reg, err, which))
			}
			continue
		}
		registries = append(registries, registry{d, tree.Get("plugins")})
	}
	if installed {
		for _, r := range registries {
			if r.plugins != nil && r.plugins.Kind == '{' {
				enabled = append(enabled, r.plugins.Keys...)
			}
		}
		slices.Sort(enabled)
		enabled = slices.Compact(enabled)
	}
	seen := map[string]bool{}
	for _, r := range registries {
		for _, plugin := range enabled {
			copies := r.plugins.Get(plugin)
			if copies == nil {
				continue // not installed: nothing starts
			}
			name, _, _ := strings.Cut(plugin, "@")
			entry, entryFile := marketplaceEntry(r.dir, plugin)
			for _, c := range append([]*Node{copies}, copies.Elems...) {
				dir := c.Get("installPath").String()
				if c.Kind != '{' || dir == "" {
					continue
				}
				found, ns := pluginDirServers(plugin, dir, ".claude-plugin")
				notes = append(notes, ns...)
				if decl := entry.Get("mcpServers"); decl != nil {
					more, ns := declaredServers(plugin, entryFile, dir, decl)
					found, notes = append(found, more...), append(notes, ns...)
				}
				for _, f := range found {
					key := "plugin:" + name + ":" + f.Name
					if !seen[key] {
						seen[key] = true
						servers = append(servers, PluginServer{Plugin: plugin, Name: key, File: f.File})
					}
				}
			}
		}
	}
	return servers, notes
}

// pluginDirServers are the MCP servers a plugin's copy in dir declares,
// under their own names: its .mcp.json and the mcpServers of its manifests
// (manifestDir/plugin.json for each manifestDir): an object, a JSON file,
// or a list of either. What it cannot read is a note.
func pluginDirServers(plugin, dir string, manifestDirs ...string) (servers []PluginServer, notes []string) {
	mj := filepath.Join(dir, ".mcp.json")
	if t, err := readTree(mj); err == nil {
		servers, notes = declaredServers(plugin, mj, dir, serversIn(t))
	} else if !os.IsNotExist(err) {
		notes = append(notes, fmt.Sprintf("plugin %s: %v: its MCP servers are not known", plugin, err))
	}
	for _, md := range manifestDirs {
		manifest := filepath.Join(dir, md, "plugin.json")
		m, err := readTree(manifest)
		if err != nil {
			continue
		}
		decl := m.Get("mcpServers")
		if decl == nil {
			continue
		}
		ss, ns := declaredServers(plugin, manifest, dir, decl)
		servers, notes = append(servers, ss...), append(notes, ns...)
	}
	return servers, notes
}

// serversIn is a server map as a plugin's files hold it: under
// mcpServers, or the whole object.
func serversIn(t *Node) *Node {
	if ms := t.Get("mcpServers"); ms != nil && ms.Kind == '{' {
		return ms
	}
	return t
}

// declaredServers are the MCP servers decl (the mcpServers of file, a
// plugin's manifest or its marketplace entry) declares for the plugin's
// copy in dir: an object, a JSON file in the copy, or a list of either.
func declaredServers(plugin, file, dir string, decl *Node) (servers []PluginServer, notes []string) {
	add := func(file string, obj *Node) {
		if obj == nil || obj.Kind != '{' {
			return
		}
		for _, s := range obj.Keys {
			servers = append(servers, PluginServer{Plugin: plugin, Name: s, File: file})
		}
	}
	for _, d := range append([]*Node{decl}, decl.Elems...) {
		switch {
		case d.Kind == '{':
			add(file, d)
		case d.Kind == 0 && strings.HasSuffix(d.String(), ".json"):
			p := filepath.Join(dir, d.String())
			if t, err := readTree(p); err == nil {
				add(p, serversIn(t))
			} else {
				notes = append(notes, fmt.Sprintf("plugin %s: %s names %s (%v): its MCP servers are not known", plugin, file, d.String(), err))
			}
		case d.Kind == 0 && d.String() != "":
			notes = append(notes, fmt.Sprintf("plugin %s: %s declares MCP servers in %s, which mcp-gate does not read: look for its servers beside the gate in the host's own list (mcp list)", plugin, file, d.String()))
		}
	}
	return servers, notes
}

// marketplaceEntry is the entry of plugin NAME@MARKETPLACE in its
// marketplace's .claude-plugin/marketplace.json, where known_marketplaces.json
// in the plugins directory dir says that marketplace is; nil when none.
// The entry's own mcpServers start servers as the plugin's manifest's do
// (a "strict": false entry has no manifest at all).
func marketplaceEntry(dir, plugin string) (entry *Node, file string) {
	name, mp, ok := strings.Cut(plugin, "@")
	if !ok {
		return nil, ""
	}
	known, err := readTree(filepath.Join(dir, "known_marketplaces.json"))
	if err != nil {
		return nil, ""
	}
	loc := known.Get(mp).Get("installLocation").String()
	if loc == "" {
		return nil, ""
	}
	file = filepath.Join(loc, ".claude-plugin", "marketplace.json")
	m, err := readTree(file)
	if err != nil {
		return nil, ""
	}
	for _, e := range m.Get("plugins").Elems {
		if e.Get("name").String() == name {
			return e, file
		}
	}
	return nil, ""
}

// claudeDeniedNames are the serverName entries of deniedMcpServers in the
// user's settings.json, or, with here, in every settings file that applies
// to a session in o.Cwd: the user's, the project's two and the
// administrator's (the CLI merges the lists; a project's entry turns off
// a server of the user's, not one the organisation provides).
func claudeDeniedNames(o Options, here bool) []string {
	files := []string{filepath.Join(claudeSettingsDir(o), "settings.json")}
	if here {
		files = append(claudeSettingsFiles(o), filepath.Join(ClaudeManagedDir(o), "managed-settings.json"))
		dropIns, _ := filepath.Glob(filepath.Join(ClaudeManagedDir(o), "managed-settings.d", "*.json"))
		files = append(files, dropIns...)
	}
	var out []string
	for _, path := range files {
		tree, err := readTree(path)
		if err != nil {
			continue
		}
		if d := tree.Get("deniedMcpServers"); d != nil {
			for _, e := range d.Elems {
				if n := e.Get("serverName"); n != nil && n.Kind == 0 {
					out = append(out, n.String())
				}
			}
		}
	}
	return out
}

// disableClaudePlugins turns the enabled plugins' servers off: at user
// scope for every project (deniedMcpServers in the user's settings.json),
// at project scope for the project (its disabledMcpServers in
// .claude.json, f). None is moved: see the top of this file.
func disableClaudePlugins(o Options, p *Plan, f *jsonFile, proj string, userScope bool) error {
	// At user scope, every installed plugin's: see claudePluginServers.
	servers, notes := claudePluginServers(o, userScope)
	p.Notes = append(p.Notes, notes...)
	if len(servers) == 0 {
		return nil
	}
	if !userScope {
		entry, err := ensure(f.tree, []string{"projects", proj})
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		list := entry.Get("disabledMcpServers")
		if list == nil {
			list = &Node{Kind: '['}
			entry.Set("disabledMcpServers", list)
		}
		names, ok := list.Strings()
		if !ok {
			return fmt.Errorf("%s: projects[%q].disabledMcpServers is %s, not a list of names: install adds the plugin servers it turns off there", f.path, proj, shortJSON(list))
		}
		denied := claudeDeniedNames(o, false)
		for _, s := range servers {
			if slices.Contains(names, s.Name) || slices.Contains(denied, s.Name) {
				continue
			}
			list.Elems = append(list.Elems, Leaf(s.Name))
			p.state.Disabled = append(p.state.Disabled, Record{File: f.path, Path: []string{"projects", proj, "disabledMcpServers"}, Name: s.Name})
			p.Notes = append(p.Notes, fmt.Sprintf("%q (plugin %s, %s) is disabled for this project (disabledMcpServers in %s) and not moved: its files are the plugin's; add it to your servers file by hand to have it behind the gate", s.Name, s.Plugin, s.File, f.path))
		}
		return nil
	}
	sf, err := loadJSONFile(filepath.Join(claudeSettingsDir(o), "settings.json"))
	if err != nil {
		return err
	}
	if sf.before == nil {
		sf.style.newline = true
	}
	denied := sf.tree.Get("deniedMcpServers")
	if denied == nil {
		denied = &Node{Kind: '['}
		sf.tree.Set("deniedMcpServers", denied)
	}
	if denied.Kind != '[' {
		return fmt.Errorf("%s: deniedMcpServers is %s, not a list: install adds a {\"serverName\": ...} entry there for each plugin server it turns off; make it a list", sf.path, shortJSON(denied))
	}
	have := claudeDeniedNames(o, false)
	for _, s := range servers {
		if slices.Contains(have, s.Name) {
			continue
		}
		e := NewObject()
		e.Set("serverName", Leaf(s.Name))
		denied.Elems = append(denied.Elems, e)
		p.state.Disabled = append(p.state.Disabled, Record{File: sf.path, Path: []string{"deniedMcpServers"}, Name: s.Name, Value: e.Compact()})
		p.Notes = append(p.Notes, fmt.Sprintf("%q (plugin %s, %s) is turned off in every project (deniedMcpServers in %s) and not moved: its files are the plugin's; add it to your servers file by hand to have it behind the gate", s.Name, s.Plugin, s.File, sf.path))
	}
	sf.edit(p)
	return nil
}

// claudeManaged reports the servers of the administrator's files, which
// install cannot edit: managed-mcp.json (exclusive control while it
// exists) and managedMcpServers in the managed settings. It returns the
// entries and notes for the report.
func claudeManaged(o Options) (direct []Entry, notes []string) {
	path := ClaudeManagedMCPPath(o)
	if _, err := os.Stat(path); err == nil {
		tree, err := readTree(path)
		fix := fmt.Sprintf("%s is your administrator's (install cannot edit it): ask them to register the gate there in its place", path)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s exists but cannot be read (%v): Claude Code then loads none of your MCP servers, the gate included", path, err))
		} else {
			ms := tree.Get("mcpServers")
			if ms != nil && ms.Kind == '{' {
				for _, name := range ms.Keys {
					args, _ := ms.Get(name).Get("args").Strings()
					if looksLikeGate(o, ms.Get(name).Get("command").String(), args) {
						continue // the administrator's gate
					}
					direct = append(direct, Entry{Where: path, Name: name, Fix: fix})
				}
			}
			notes = append(notes, fmt.Sprintf("%s exists: it has exclusive control of MCP servers, so Claude Code starts only the servers it lists and none of yours, the gate install registers included", path))
		}
	}
	settings := []string{filepath.Join(ClaudeManagedDir(o), "managed-settings.json")}
	dropIns, _ := filepath.Glob(filepath.Join(ClaudeManagedDir(o), "managed-settings.d", "*.json"))
	slices.Sort(dropIns)
	for _, sp := range append(settings, dropIns...) {
		tree, err := readTree(sp)
		if err != nil {
			continue
		}
		ms := tree.Get("managedMcpServers")
		if ms == nil || ms.Kind != '{' {
			continue
		}
		for _, name := range ms.Keys {
			direct = append(direct, Entry{Where: sp + " (managedMcpServers)", Name: name, Fix: fmt.Sprintf("%s is your administrator's and users cannot remove its servers: ask them to put %q behind the gate", sp, name)})
		}
	}
	return direct, notes
}

// claudeCommandLineNote is what no file shows.
const claudeCommandLineNote = "servers given on Claude Code's command line (--mcp-config, --plugin-dir), in CLAUDE_CODE_PLUGIN_DIRS, or by an SDK host are in no file mcp-gate reads; start Claude Code with --strict-mcp-config --mcp-config naming only the gate where a launcher adds others"

// shortJSON is n as compact JSON, cut to a length an error can quote.
func shortJSON(n *Node) string {
	c := n.Compact()
	if len(c) > 60 {
		c = c[:57] + "..."
	}
	return c
}

// jsoncAdvice is what to do about a host file with comments or trailing
// commas. Claude Code's settings files are read as strict JSON: the pinned
// 2.1.332 CLI ignores such a file whole (the plugins it enables, the
// servers it denies are not in effect), so install refuses it rather than
// rewrite it without its comments.
func jsoncAdvice(path string) string {
	switch filepath.Base(path) {
	case "settings.json", "settings.local.json", "cowork_settings.json":
		return "Claude Code does not read such a settings file either (it ignores the whole file, so none of its settings are in effect now); remove the comments and trailing commas, then run the command again (nothing was written)"
	}
	return "remove the comments and trailing commas, then run the command again (nothing was written; an edit could not keep them)"
}

// hasJSONCSyntax says whether data has a comment (// or /* outside a
// string) or a comma before a closing bracket.
func hasJSONCSyntax(data []byte) bool {
	inString, escaped := false, false
	lastSignificant := byte(0)
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '/':
			if i+1 < len(data) && (data[i+1] == '/' || data[i+1] == '*') {
				return true
			}
		case '}', ']':
			if lastSignificant == ',' {
				return true
			}
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			lastSignificant = c
		}
	}
	return false
}
