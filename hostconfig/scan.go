package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mcp-gate/mcp-gate/internal/statefile"
)

// HostReport is what one host's config registers: gates (entries that
// start mcp-gate serve) and servers registered directly.
type HostReport struct {
	Host   string
	Config string // the main config file
	Found  bool   // whether the host has a config here at all
	Gates  []GateEntry
	Direct []Entry
	Notes  []string // what the files cannot show (servers given on the command line)
	Err    error    // the config could not be read
}

// GateEntry is a gate registered with the host: Key is the name the host
// knows it by, Name the --name it runs with ("" when it passes none, so
// "gate").
type GateEntry struct {
	Where, Key, Name string
	Project          string // the project it applies to; "" for every one
	Servers, Policy  string // its --servers and --policy ("" for serve's defaults)
}

// Entry is a server registered directly with the host.
type Entry struct {
	Where, Name, Project string
	// Fix is what the user can do when install cannot take the entry
	// away (a file root owns, a plugin's server): "" when "mcp-gate
	// install" moves or disables it.
	Fix string
}

// Beside says whether a direct entry is registered beside one of the
// host's gates: both apply to the same sessions (one of them for every
// project, or both for the same project), so the model sees the entry's
// tools without the policy next to the gate's.
func (r HostReport) Beside(d Entry) bool {
	for _, g := range r.Gates {
		if g.Project == "" || d.Project == "" || g.Project == d.Project {
			return true
		}
	}
	return false
}

// Scan reads each host's config and reports what it registers. It never
// writes anything.
func Scan(o Options) []HostReport {
	return []HostReport{scanClaudeCode(o), scanCodex(o), scanJSON(o, "claude-desktop", ClaudeDesktopConfigPath(o))}
}

// argValue is the value of flag in a gate's arguments ("--flag v" or
// "--flag=v"), or "".
func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func gateEntry(where, key string, args []string) GateEntry {
	g := GateEntry{Where: where, Key: key, Name: argValue(args, "--name"), Servers: argValue(args, "--servers"), Policy: argValue(args, "--policy")}
	if g.Name == "" {
		g.Name = "gate"
	}
	return g
}

func classify(o Options, r *HostReport, where, project string, obj *Node) {
	if obj == nil {
		return
	}
	for i, name := range obj.Keys {
		e := obj.Vals[i]
		args, _ := e.Get("args").Strings()
		if looksLikeGate(o, e.Get("command").String(), args) {
			g := gateEntry(where, name, args)
			g.Project = project
			r.Gates = append(r.Gates, g)
		} else {
			r.Direct = append(r.Direct, Entry{Where: where, Name: name, Project: project})
		}
	}
}

func scanJSON(o Options, host, path string) HostReport {
	r := HostReport{Host: host, Config: path}
	if _, err := os.Stat(path); err != nil {
		return r
	}
	r.Found = true
	f, err := loadJSONFile(path)
	if err != nil {
		r.Err = err
		return r
	}
	classify(o, &r, path, "", lookup(f.tree, []string{"mcpServers"}))
	return r
}

func scanClaudeCode(o Options) HostReport {
	path := ClaudeCodeConfigPath(o)
	r := HostReport{Host: "claude-code", Config: path}
	f, err := loadJSONFile(path)
	if err != nil {
		r.Err = err
		return r
	}
	r.Found = f.before != nil
	classify(o, &r, "user scope", "", lookup(f.tree, []string{"mcpServers"}))
	// The administrator's servers, which install cannot take away.
	managed, notes := claudeManaged(o)
	r.Direct = append(r.Direct, managed...)
	r.Notes = append(r.Notes, notes...)
	r.Found = r.Found || len(managed) > 0 || len(notes) > 0
	// The plugins' servers, the set install turns off (every plugin
	// installed or enabled anywhere, not only here: a project's settings
	// can enable one), less those turned off in the settings a session
	// here reads or disabled for this project.
	plugins, notes := ClaudePluginServers(o)
	r.Notes = append(r.Notes, notes...)
	var projDisabled []string
	if o.Cwd != "" {
		projDisabled, _ = lookup(f.tree, []string{"projects", claudeProjectKey(o, o.Cwd)}).Get("disabledMcpServers").Strings()
	}
	for _, s := range claudePluginServersOn(o, plugins, projDisabled) {
		r.Found = true
		r.Direct = append(r.Direct, Entry{Where: "plugin " + s.Plugin + ", " + s.File, Name: s.Name,
			Fix: fmt.Sprintf("mcp-gate install claude-code (turns it off: the plugin's files stay as they are; to have %s behind the gate, add it to the servers file by hand)", s.Name)})
	}
	// A settings file Claude Code cannot read is ignored by it whole.
	for _, sp := range append(claudeUserSettingsFiles(o), claudeProjectSettingsFiles(o)...) {
		if _, err := readTree(sp); err != nil && !os.IsNotExist(err) {
			r.Found = true
			r.Notes = append(r.Notes, fmt.Sprintf("%v: Claude Code reads settings as strict JSON and ignores this file whole, so the plugins it enables and the servers it denies are not in effect", err))
		}
	}
	if r.Found {
		r.Notes = append(r.Notes, claudeCommandLineNote)
	}
	if projects := lookup(f.tree, []string{"projects"}); projects != nil {
		for _, dir := range projects.Keys {
			classify(o, &r, "local scope, "+dir, dir, lookup(f.tree, []string{"projects", dir, "mcpServers"}))
		}
	}
	if o.Cwd == "" {
		return r
	}
	// The project's .mcp.json files, less what this user disabled (in
	// either place Claude Code reads).
	servers, err := ClaudeProjectServers(o)
	if err != nil {
		r.Err = err
		return r
	}
	if len(servers) > 0 {
		r.Found = true
	}
	var disabled []string
	if pe := lookup(f.tree, []string{"projects", claudeProjectKey(o, o.Cwd)}); pe != nil {
		d, _ := pe.Get("disabledMcpjsonServers").Strings()
		disabled = append(disabled, d...)
	}
	if lf, err := loadJSONFile(filepath.Join(o.Cwd, ".claude", "settings.local.json")); err == nil {
		d, _ := lf.tree.Get("disabledMcpjsonServers").Strings()
		disabled = append(disabled, d...)
	}
	for _, s := range servers {
		if slices.Contains(disabled, s.Name) {
			continue
		}
		// A project's file is the project's: an entry there that starts
		// mcp-gate runs it with the project's policy and servers (its
		// arguments, env and cwd are the repository's), so it is a way
		// around the user's gate like any other server.
		r.Direct = append(r.Direct, Entry{Where: s.File, Name: s.Name, Project: claudeProjectKey(o, o.Cwd)})
	}
	return r
}

// ProjectServer is a server a project's shared file registers: the name,
// the file that defines it and its entry there.
type ProjectServer struct {
	File, Name string
	Entry      *Node
	// Foreign: the file is not the user's, or anyone may write it (a
	// .mcp.json in /tmp or in another user's directory above the
	// project). The host reads it all the same; install disables its
	// servers and moves none, as what they run is not the user's.
	Foreign bool
}

// ClaudeMCPJSONFiles are the project files Claude Code reads servers from
// for a session started in o.Cwd: .mcp.json in that directory and in every
// parent up to, not including, the file system root (a monorepo's root, the
// home directory, whatever directory the checkout sits in), nearest first.
// Only files that exist are listed.
func ClaudeMCPJSONFiles(o Options) []string {
	if o.Cwd == "" {
		return nil
	}
	var out []string
	for dir := filepath.Clean(o.Cwd); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		p := filepath.Join(dir, ".mcp.json")
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ClaudeProjectServers are the servers Claude Code takes from the project's
// .mcp.json files (ClaudeMCPJSONFiles) for a session in o.Cwd: for each
// name, the entry of the nearest file that defines it, as Claude Code
// merges them. A file that cannot be read is skipped (the host cannot read
// it either); one that does not parse is an error.
func ClaudeProjectServers(o Options) ([]ProjectServer, error) {
	var out []ProjectServer
	seen := map[string]bool{}
	for _, path := range ClaudeMCPJSONFiles(o) {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		foreign := false
		if fi, err := os.Stat(path); err == nil && notUsers(fi) {
			foreign = true
		}
		tree, err := ParseTree(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		servers := tree.Get("mcpServers")
		if servers == nil || servers.Kind != '{' {
			continue
		}
		for i, name := range servers.Keys {
			if seen[name] {
				continue // a nearer file's entry wins
			}
			seen[name] = true
			out = append(out, ProjectServer{File: path, Name: name, Entry: servers.Vals[i], Foreign: foreign})
		}
	}
	return out, nil
}

func scanCodex(o Options) HostReport {
	path := CodexConfigPath(o)
	r := HostReport{Host: "codex", Config: path}
	scanCodexFile(o, &r, path, "")
	for _, pp := range CodexProjectConfigs(o) {
		scanCodexFile(o, &r, pp, filepath.Dir(filepath.Dir(pp)))
	}
	plugins, notes := CodexPluginServers(o)
	r.Notes = append(r.Notes, notes...)
	for _, s := range plugins {
		r.Found = true
		r.Direct = append(r.Direct, Entry{Where: "plugin " + s.Plugin + ", " + s.File, Name: s.Name, Fix: codexPluginFix(s)})
	}
	// The administrator's layers apply to every session: under the
	// user's (config.toml) and over it (managed_config.toml). Install
	// edits neither.
	for _, sys := range CodexSystemConfigs(o) {
		n := len(r.Direct)
		scanCodexFile(o, &r, sys, "")
		for i := n; i < len(r.Direct); i++ {
			r.Direct[i].Fix = codexSystemFix(sys)
		}
	}
	return r
}

// CodexSystemConfigs are the administrator's config files Codex reads in
// every session, those that exist: the system layer (under the user's)
// and the managed one (over it).
func CodexSystemConfigs(o Options) []string {
	var out []string
	for _, p := range []string{filepath.Join(CodexSystemDir(o), "config.toml"), codexManagedConfigPath(o)} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// codexManagedConfigPath is the administrators' managed_config.toml, the
// layer Codex puts over every other (the pinned 0.171.0 CLI on Linux:
// /etc/codex/managed_config.toml wins over the user's config.toml, while
// $CODEX_HOME/managed_config.toml is not read at all). Codex's source
// reads it from CODEX_HOME on Windows, which the pinned Linux binary
// cannot show.
func codexManagedConfigPath(o Options) string {
	if o.GOOS == "windows" {
		return filepath.Join(filepath.Dir(CodexConfigPath(o)), "managed_config.toml")
	}
	return filepath.Join(CodexSystemDir(o), "managed_config.toml")
}

// codexLayer is one config file Codex merges into a session's config.
type codexLayer struct {
	path    string
	project bool // a project's .codex/config.toml (Codex reads it only when it trusts the project)
}

// codexLayers are the config files Codex merges for a session in o.Cwd,
// lowest first, as the pinned CLI layers them: the system config.toml,
// the user's config.toml, each project .codex/config.toml from the
// project root down to the working directory, and managed_config.toml
// over them all. Those that do not exist are left out. Everything the
// gate reads of Codex's merged config (project_root_markers, plugins)
// goes through it.
func codexLayers(o Options) []codexLayer {
	var out []codexLayer
	for _, p := range []string{filepath.Join(CodexSystemDir(o), "config.toml"), CodexConfigPath(o)} {
		out = append(out, codexLayer{path: p})
	}
	projects := CodexProjectConfigs(o)
	for _, p := range slices.Backward(projects) {
		out = append(out, codexLayer{path: p, project: true})
	}
	out = append(out, codexLayer{path: codexManagedConfigPath(o)})
	return slices.DeleteFunc(out, func(l codexLayer) bool {
		_, err := os.Stat(l.path)
		return err != nil
	})
}

// readCodexLayer is a layer's document, or nil when it cannot be read or
// parsed (Codex then fails to start, which is not a way around the gate).
func readCodexLayer(path string) map[string]any {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc
}

func codexSystemFix(path string) string {
	return fmt.Sprintf("%s is the administrator's (install does not edit it): remove the server there, or ask whoever manages this machine to put it behind the gate", path)
}

func scanCodexFile(o Options, r *HostReport, path, project string) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	r.Found = true
	if err != nil {
		r.Err = err
		return
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		r.Err = fmt.Errorf("%s: %w", path, err)
		return
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		e, _ := servers[name].(map[string]any)
		if en, ok := e["enabled"].(bool); ok && !en {
			continue
		}
		cmd, _ := e["command"].(string)
		args := anyStrings(e["args"])
		// A project's file is the project's: a gate there runs with the
		// project's settings, a way around the user's gate.
		if project == "" && looksLikeGate(o, cmd, args) {
			g := gateEntry(path, name, args)
			g.Project = project
			r.Gates = append(r.Gates, g)
		} else {
			r.Direct = append(r.Direct, Entry{Where: path, Name: name, Project: project})
		}
	}
}

// CodexProjectConfigs are the project-level .codex/config.toml files Codex
// layers over the user's for a trusted project: in the working directory
// and each parent up to the project root, which is the nearest directory
// holding one of project_root_markers (codexRootMarkers: managed_config.toml,
// else the user's config.toml, else the system's; [".git"] when none sets
// it), or the working directory
// itself when none holds one or the list is empty. The pinned Codex CLI
// read a file above a .git when the markers named another (".hg", ".sl"):
// a fixed stop at .git missed it.
func CodexProjectConfigs(o Options) []string {
	if o.Cwd == "" {
		return nil
	}
	cwd := filepath.Clean(o.Cwd)
	root := cwd
	if markers := codexRootMarkers(o); len(markers) > 0 {
	find:
		for dir := cwd; ; dir = filepath.Dir(dir) {
			for _, m := range markers {
				if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
					root = dir
					break find
				}
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	var out []string
	for dir := cwd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, ".codex", "config.toml")
		if p != CodexConfigPath(o) {
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
		if dir == root || dir == filepath.Dir(dir) {
			return out
		}
	}
}

// codexRootMarkers is project_root_markers as Codex reads it: the value of
// the highest layer that sets it among the system config, the user's and
// managed_config.toml (the pinned CLI: markers set in managed_config.toml
// win over the user's; a project's own file cannot move its root), else
// [".git"].
func codexRootMarkers(o Options) []string {
	markers := []string{".git"}
	for _, l := range codexLayers(o.withoutProject()) {
		if v, ok := readCodexLayer(l.path)["project_root_markers"]; ok {
			markers = anyStrings(v)
		}
	}
	return markers
}

// withoutProject is o for a session whose layers hold no project's file.
func (o Options) withoutProject() Options {
	o.Cwd = ""
	return o
}

// CodexSystemDir holds the configs Codex reads beside the user's on Unix:
// config.toml (the system layer, under the user's) and managed_config.toml
// (an administrator's, over it). Both may register servers; both belong to
// root. Options.CodexSystemDir replaces it (tests).
func CodexSystemDir(o Options) string {
	if o.CodexSystemDir != "" {
		return o.CodexSystemDir
	}
	return "/etc/codex"
}

// notUsers says whether a file is another user's, or one anyone may
// write, where Unix owners and modes apply (elsewhere it is false). Group
// write is common for the user's own files (a umask of 002 with a group of
// the user's own), so it is not counted.
func notUsers(fi fs.FileInfo) bool {
	uid, ok := statefile.OwnerUID(fi)
	return ok && (uid != os.Getuid() || fi.Mode().Perm()&0o002 != 0)
}
