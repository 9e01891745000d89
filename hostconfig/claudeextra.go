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
//     settings files (settings.json, and cowork_settings.json where the
//     cowork plugins are in use), for the project through its
//     disabledMcpServers in .claude.json. The scan reads the same servers
//     (ClaudePluginServers).
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
// unreadable or not an object. Plugins' and marketplaces' files are often
// a cloned repository's: one that is not a regular file (a link to
// /dev/zero, a FIFO) is refused rather than read without end.
func readTree(path string) (*Node, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
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

// claudeUserSettingsFiles are the user settings files Claude Code
// sessions read: settings.json, and cowork_settings.json where the cowork
// plugins are in use (the pinned CLI reads cowork_settings.json in place
// of settings.json, and cowork_plugins in place of plugins, when
// CLAUDE_CODE_USE_COWORK_PLUGINS is set or "claude plugin --cowork" runs;
// taken as in use when that variable is set here or either exists).
func claudeUserSettingsFiles(o Options) []string {
	dir := claudeSettingsDir(o)
	out := []string{filepath.Join(dir, "settings.json")}
	cowork := filepath.Join(dir, "cowork_settings.json")
	_, errS := os.Stat(cowork)
	_, errP := os.Stat(filepath.Join(dir, "cowork_plugins"))
	if o.getenv("CLAUDE_CODE_USE_COWORK_PLUGINS") != "" || errS == nil || errP == nil {
		out = append(out, cowork)
	}
	return out
}

// claudeProjectSettingsFiles are the project's settings files of a
// session in o.Cwd: .claude/settings.json and .claude/settings.local.json.
func claudeProjectSettingsFiles(o Options) []string {
	if o.Cwd == "" {
		return nil
	}
	return []string{filepath.Join(o.Cwd, ".claude", "settings.json"), filepath.Join(o.Cwd, ".claude", "settings.local.json")}
}

// claudeManagedSettingsFiles are the administrator's settings files:
// managed-settings.json and the drop-ins of managed-settings.d.
func claudeManagedSettingsFiles(o Options) []string {
	dropIns, _ := filepath.Glob(filepath.Join(ClaudeManagedDir(o), "managed-settings.d", "*.json"))
	slices.Sort(dropIns)
	return append([]string{filepath.Join(ClaudeManagedDir(o), "managed-settings.json")}, dropIns...)
}

// enabledClaudePlugins are the plugins any settings file Claude Code may
// read turns on: the user's (both kinds), the project's and the
// administrator's (whose enabledPlugins the pinned CLI honours over every
// other). Any value but false counts (the CLI's "a list of versions
// leaves it off" is not relied on).
func enabledClaudePlugins(o Options) []string {
	var out []string
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
			if v := ep.Vals[i]; !(v.Kind == 0 && v.Compact() == "false") {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// claudePluginDirs are the directories Claude Code keeps plugins in:
// plugins and cowork_plugins in its config directory, each
// CLAUDE_CODE_PLUGIN_CACHE_DIR (which a session uses in their place), and
// each of CLAUDE_CODE_PLUGIN_SEED_DIR (pre-installed plugins). The
// variables are read from the environment and from the env of every
// settings file a session may read (the pinned CLI applies a settings
// file's env, a project's included, before it reads its plugins), with a
// leading ~ as the user's home (the CLI expands it): a session in a
// project whose settings name a cache directory reads that one.
func claudePluginDirs(o Options) []string {
	dirs := []string{filepath.Join(claudeSettingsDir(o), "plugins"), filepath.Join(claudeSettingsDir(o), "cowork_plugins")}
	for _, name := range []string{"CLAUDE_CODE_PLUGIN_CACHE_DIR", "CLAUDE_CODE_PLUGIN_SEED_DIR"} {
		values := []string{o.getenv(name)}
		for _, path := range claudeSettingsFiles(o) {
			if tree, err := readTree(path); err == nil {
				values = append(values, tree.Get("env").Get(name).String())
			}
		}
		for _, v := range values {
			for _, d := range filepath.SplitList(v) {
				if d = claudeExpandHome(o, d); d != "" && !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// claudeSettingsFiles are every settings file a Claude Code session may
// read: the user's, the project's and the administrator's.
func claudeSettingsFiles(o Options) []string {
	return append(append(claudeUserSettingsFiles(o), claudeProjectSettingsFiles(o)...), claudeManagedSettingsFiles(o)...)
}

// claudeExpandHome is a directory a Claude Code variable names, with a
// leading ~ as the user's home and a relative path taken from the
// project; "" for none.
func claudeExpandHome(o Options, d string) string {
	switch {
	case d == "":
		return ""
	case d == "~":
		return o.Home
	case strings.HasPrefix(d, "~/"), o.GOOS == "windows" && strings.HasPrefix(d, `~\`):
		return filepath.Join(o.Home, d[2:])
	case !filepath.IsAbs(d) && o.Cwd != "":
		return filepath.Join(o.Cwd, d)
	}
	return d
}

// claudePluginRegistry is the file that lists the installed copies of a
// plugins directory: installed_plugins_v2.json while one is there (the
// pinned CLI renames it over installed_plugins.json when a session starts,
// and reads it then), else installed_plugins.json.
func claudePluginRegistry(dir string) string {
	v2 := filepath.Join(dir, "installed_plugins_v2.json")
	if _, err := os.Stat(v2); err == nil {
		return v2
	}
	return filepath.Join(dir, "installed_plugins.json")
}

// ClaudePluginServers are the MCP servers Claude Code's plugins may start,
// the one set install turns off and the scan (doctor) reads, wherever
// either runs: every plugin installed in a plugins directory
// (claudePluginDirs, each copy its registry lists) and every plugin a
// settings file enables, enabled here or not. A project's
// .claude/settings.json enables a plugin for that project only (one
// installed with --scope project, or one a repository's settings turn on
// that the user left off), so what one directory's settings enable is not
// what every project starts. For each: every copy's .mcp.json and the
// mcpServers of its .claude-plugin/plugin.json (an object, a file, or a
// list of either), and its marketplace entry's mcpServers and source
// directory (a local marketplace's plugin is read from there, registered
// or not). A declaration this cannot read (an MCPB bundle) is a note.
func ClaudePluginServers(o Options) (servers []PluginServer, notes []string) {
	plugins := enabledClaudePlugins(o)
	type registry struct {
		dir     string
		plugins *Node
	}
	var registries []registry
	for _, d := range claudePluginDirs(o) {
		reg := claudePluginRegistry(d)
		tree, err := readTree(reg)
		if err != nil {
			if !os.IsNotExist(err) {
				notes = append(notes, fmt.Sprintf("%s cannot be read (%v): the MCP servers of the plugins installed there are not known", reg, err))
			}
			if _, err := os.Stat(filepath.Join(d, "known_marketplaces.json")); err == nil {
				registries = append(registries, registry{d, nil})
			}
			continue
		}
		registries = append(registries, registry{d, tree.Get("plugins")})
		if ps := tree.Get("plugins"); ps != nil && ps.Kind == '{' {
			plugins = append(plugins, ps.Keys...)
		}
	}
	slices.Sort(plugins)
	plugins = slices.Compact(plugins)
	seen := map[string]bool{}
	add := func(plugin string, found []PluginServer) {
		name, _, _ := strings.Cut(plugin, "@")
		for _, f := range found {
			key := "plugin:" + name + ":" + f.Name
			if !seen[key] {
				seen[key] = true
				servers = append(servers, PluginServer{Plugin: plugin, Name: key, File: f.File})
			}
		}
	}
	for _, r := range registries {
		for _, plugin := range plugins {
			entry, entryFile, source := marketplaceEntry(r.dir, plugin)
			var dirs []string
			if copies := r.plugins.Get(plugin); copies != nil {
				for _, c := range append([]*Node{copies}, copies.Elems...) {
					if dir := c.Get("installPath").String(); c.Kind == '{' && dir != "" {
						dirs = append(dirs, dir)
					}
				}
			}
			if source != "" {
				dirs = append(dirs, source)
			}
			for _, dir := range dirs {
				found, ns := pluginDirServers(plugin, dir, ".claude-plugin")
				notes = append(notes, ns...)
				if decl := entry.Get("mcpServers"); decl != nil {
					more, ns := declaredServers(plugin, entryFile, dir, decl)
					found, notes = append(found, more...), append(notes, ns...)
				}
				add(plugin, found)
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
// (a "strict": false entry has no manifest at all). source is the
// plugin's directory inside the marketplace when the entry names one
// ("source": "./plugins/NAME", or a bare "NAME" under the marketplace's
// metadata.pluginRoot): the pinned CLI reads a local marketplace's plugin
// from there, copy or no copy in the cache.
func marketplaceEntry(dir, plugin string) (entry *Node, file, source string) {
	name, mp, ok := strings.Cut(plugin, "@")
	if !ok {
		return nil, "", ""
	}
	known, err := readTree(filepath.Join(dir, "known_marketplaces.json"))
	if err != nil {
		return nil, "", ""
	}
	loc := known.Get(mp).Get("installLocation").String()
	if loc == "" {
		return nil, "", ""
	}
	file = filepath.Join(loc, ".claude-plugin", "marketplace.json")
	m, err := readTree(file)
	if err != nil {
		return nil, "", ""
	}
	root := marketplacePluginRoot(m.Get("metadata").Get("pluginRoot").String())
	for _, e := range m.Get("plugins").Items() {
		if e.Get("name").String() == name {
			src := e.Get("source").String()
			if root != "" && bareSourceName(src) {
				src = root + "/" + src
			}
			if src != "" && !filepath.IsAbs(src) {
				if p := filepath.Join(loc, src); strings.HasPrefix(p, filepath.Clean(loc)+string(filepath.Separator)) {
					source = p
				}
			}
			return e, file, source
		}
	}
	return nil, "", ""
}

// marketplacePluginRoot is a marketplace's metadata.pluginRoot as the
// pinned CLI takes it, the directory (relative to the marketplace's root,
// "." for the root itself) a bare source name resolves under ("pluginRoot":
// "./plugins" makes "source": "pl" ./plugins/pl); "" when unset or not a
// plain relative path (absolute, with a backslash, a colon, or an empty,
// "." or ".." element), which the CLI ignores.
func marketplacePluginRoot(root string) string {
	if root == "" || strings.HasPrefix(root, "/") || strings.ContainsAny(root, `\:`) {
		return ""
	}
	root = strings.TrimRight(strings.TrimPrefix(root, "./"), "/")
	if root == "" || root == "." {
		return "."
	}
	for _, el := range strings.Split(root, "/") {
		if el == "" || el == "." || el == ".." {
			return ""
		}
	}
	return root
}

// bareSourceName says whether a marketplace entry's source is a bare name
// (a letter or digit, then letters, digits, '-', '.' and '_', no ".."),
// which the pinned CLI resolves under metadata.pluginRoot.
func bareSourceName(src string) bool {
	if src == "" || strings.Contains(src, "..") {
		return false
	}
	for i, c := range src {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("-._", c)) {
			return false
		}
	}
	return true
}

// claudeDenied are the serverName entries of deniedMcpServers in files
// (the CLI merges the lists of every settings file of a session; a
// project's entry turns off a server of the user's, not one the
// organisation provides). A file that is not JSON is skipped, as the CLI
// skips it.
func claudeDenied(files ...string) []string {
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

// claudeDeniedEverywhere says whether name is denied in every user
// settings file (so in every session, whatever the project).
func claudeDeniedEverywhere(o Options, name string) bool {
	for _, u := range claudeUserSettingsFiles(o) {
		if !slices.Contains(claudeDenied(u), name) {
			return false
		}
	}
	return true
}

// claudePluginServersOn are the plugin servers (ClaudePluginServers) a
// session in o.Cwd may start: those not denied in the settings it reads
// (for each user settings file, with the project's and the
// administrator's), nor disabled for the project (projDisabled).
func claudePluginServersOn(o Options, servers []PluginServer, projDisabled []string) []PluginServer {
	var on []PluginServer
	for _, s := range servers {
		if slices.Contains(projDisabled, s.Name) {
			continue
		}
		for _, u := range claudeUserSettingsFiles(o) {
			files := append(append([]string{u}, claudeProjectSettingsFiles(o)...), claudeManagedSettingsFiles(o)...)
			if !slices.Contains(claudeDenied(files...), s.Name) {
				on = append(on, s)
				break
			}
		}
	}
	return on
}

// disableClaudePlugins turns off the servers of every plugin
// (ClaudePluginServers, the set the scan reads): at user scope for every
// project (deniedMcpServers in each user settings file), at project scope
// for the project (its disabledMcpServers in .claude.json, f). None is
// moved: see the top of this file.
func disableClaudePlugins(o Options, p *Plan, f *jsonFile, proj string, userScope bool) error {
	servers, notes := ClaudePluginServers(o)
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
		for _, s := range servers {
			if slices.Contains(names, s.Name) || claudeDeniedEverywhere(o, s.Name) {
				continue
			}
			list.Elems = append(list.Elems, Leaf(s.Name))
			p.state.Disabled = append(p.state.Disabled, Record{File: f.path, Path: []string{"projects", proj, "disabledMcpServers"}, Name: s.Name})
			p.Notes = append(p.Notes, fmt.Sprintf("%q (plugin %s, %s) is disabled for this project (disabledMcpServers in %s) and not moved: its files are the plugin's; add it to your servers file by hand to have it behind the gate", s.Name, s.Plugin, s.File, f.path))
		}
		p.state.snapshotList(f.path, list, "projects", proj, "disabledMcpServers")
		return nil
	}
	for _, path := range claudeUserSettingsFiles(o) {
		sf, err := loadJSONFile(path)
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
		have := claudeDenied(path)
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
		p.state.snapshotList(sf.path, denied, "deniedMcpServers")
		sf.edit(p)
	}
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
	for _, sp := range claudeManagedSettingsFiles(o) {
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
