package hostconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Hosts are the hosts install knows.
var Hosts = []string{"claude-code", "codex", "claude-desktop"}

// Options say where things are and what to register. Every path and
// variable comes in here, so tests run each host layout in a temporary
// home.
type Options struct {
	Home     string              // the user's home directory
	Getenv   func(string) string // CLAUDE_CONFIG_DIR, CODEX_HOME, APPDATA, XDG_CONFIG_HOME
	GOOS     string              // selects Claude Desktop's path
	Cwd      string              // the project, for Claude Code
	Scope    string              // Claude Code: "user" (default) or "project"
	Name     string              // the name the host gives the gate
	Command  string              // absolute path of the mcp-gate binary
	Servers  string              // the gate's servers file
	Policy   string              // policy file passed to serve ("" = serve's default)
	StateDir string              // where install records and backups live
	Timeout  time.Duration       // the policy's approval timeout (Codex tool_timeout_sec)
	Now      func() time.Time    // backup names

	// The directories administrators' configs live in, for tests: ""
	// is the host's own (ClaudeManagedDir, CodexSystemDir).
	ClaudeManagedDir, CodexSystemDir string
}

// FileEdit is one file a plan writes: Before is nil when it does not exist.
type FileEdit struct {
	Path   string
	Before []byte
	After  []byte
}

// Plan is what an install would do, before it does it.
type Plan struct {
	Host  string
	Edits []FileEdit // only files whose bytes change
	Notes []string   // what the user must know: renames, environment, rules, servers left in place
	Moved []string   // "host name -> servers key"
	state *State
}

// Changed says whether the plan writes anything.
func (p *Plan) Changed() bool { return len(p.Edits) > 0 }

// Diff is the plan as a readable diff of every file it changes.
func (p *Plan) Diff() string {
	var b strings.Builder
	for _, e := range p.Edits {
		b.WriteString(Diff(e.Path, e.Before, e.After))
	}
	return b.String()
}

// State is what an install records so that uninstall undoes exactly its
// own edits: the backups, each file's hash as install left it, and each
// edit as a record.
type State struct {
	Host     string      `json:"host"`
	Files    []FileState `json:"files"`
	Gate     []Record    `json:"gate,omitempty"`     // entries install added to host files
	Moved    []Record    `json:"moved,omitempty"`    // entries install removed from host files
	Disabled []Record    `json:"disabled,omitempty"` // names install added to a disabled list
	Added    []Record    `json:"added,omitempty"`    // entries install added to the servers file
}

// FileState is one file install changed.
type FileState struct {
	Path    string `json:"path"`
	Backup  string `json:"backup,omitempty"` // "" when the file did not exist
	Created bool   `json:"created,omitempty"`
	After   string `json:"after"` // sha256 of the bytes install wrote
	// Edited: the file was changed between two installs that edited it,
	// so its backup (the first install's) lacks those changes: uninstall
	// undoes install's records there instead of restoring the backup.
	Edited bool `json:"edited,omitempty"`
}

// Record is one edit: in File, under the object at Path, key Name, with
// value Value (compact JSON, or the TOML table text for Codex) at Index.
type Record struct {
	File  string   `json:"file"`
	Path  []string `json:"path,omitempty"`
	Name  string   `json:"name"`
	Value string   `json:"value,omitempty"`
	Index int      `json:"index,omitempty"`
	// List is, for a name install added to a list (Disabled), every
	// element of that list as install left it (compact JSON): uninstall
	// tells install's entry from one the user added again after it by
	// what comes before it (ownEntry).
	List []string `json:"list,omitempty"`
}

// snapshotList records on each of this plan's Disabled records of the
// list at path in file the list as install leaves it.
func (st *State) snapshotList(file string, list *Node, path ...string) {
	elems := make([]string, 0, len(list.Elems))
	for _, e := range list.Elems {
		elems = append(elems, e.Compact())
	}
	for i := range st.Disabled {
		if r := &st.Disabled[i]; r.File == file && slices.Equal(r.Path, path) {
			r.List = elems
		}
	}
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (o *Options) statePath(host string) string {
	return filepath.Join(o.StateDir, host+".json")
}

func (o *Options) getenv(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

// LoadState reads the record of an install of host, or nil when there is
// none.
func LoadState(o Options, host string) (*State, error) {
	data, err := os.ReadFile(o.statePath(host))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading install record: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("install record %s: %w", o.statePath(host), err)
	}
	return &st, nil
}

// PlanInstall plans putting the gate in front of host.
func PlanInstall(o Options, host string) (*Plan, error) {
	if o.Name == "" || o.Command == "" || o.Servers == "" || o.StateDir == "" {
		return nil, errors.New("install options need Name, Command, Servers and StateDir")
	}
	if strings.Contains(o.Command, string(filepath.Separator)+"go-build") {
		return nil, fmt.Errorf("the gate's command %s is a temporary \"go run\" binary that will be gone; install mcp-gate first (go install ./cmd/mcp-gate) or pass --command", o.Command)
	}
	if !filepath.IsAbs(o.Command) || !filepath.IsAbs(o.Servers) {
		return nil, errors.New("the gate's command and servers file must be absolute paths: the host starts the gate from its own working directory")
	}
	sf, err := loadServersFile(o.Servers)
	if err != nil {
		return nil, err
	}
	p := &Plan{Host: host, state: &State{Host: host}}
	switch host {
	case "claude-code":
		err = planClaudeCode(o, p, sf)
	case "claude-desktop":
		err = planClaudeDesktop(o, p, sf)
	case "codex":
		err = planCodex(o, p, sf)
	default:
		return nil, fmt.Errorf("unknown host %q; expected one of %s", host, strings.Join(Hosts, ", "))
	}
	if err != nil {
		return nil, err
	}
	if after := sf.bytes(); !bytes.Equal(after, sf.before) {
		p.Edits = append(p.Edits, FileEdit{Path: sf.path, Before: sf.before, After: after})
	}
	return p, nil
}

// Apply writes a plan: a backup of each file first, then the files, then
// the record uninstall reads.
func Apply(o Options, p *Plan) error {
	if !p.Changed() {
		return nil
	}
	prev, err := LoadState(o, p.Host)
	if err != nil {
		return err
	}
	st := p.state
	if prev != nil {
		merged := *prev
		merged.Gate = append(merged.Gate, st.Gate...)
		merged.Moved = append(merged.Moved, st.Moved...)
		merged.Disabled = append(merged.Disabled, st.Disabled...)
		merged.Added = append(merged.Added, st.Added...)
		st = &merged
	}
	// The record goes first: a crash between files leaves an uninstall
	// that can still find every backup.
	return writeEdits("install", p.Edits, func() error {
		if err := os.MkdirAll(filepath.Join(o.StateDir, "backups"), 0o700); err != nil {
			return fmt.Errorf("creating the backup directory: %w", err)
		}
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		stamp := now().UTC().Format("20060102T150405.000000000Z")
		for i, e := range p.Edits {
			fs := FileState{Path: e.Path, After: hash(e.After)}
			j := slices.IndexFunc(st.Files, func(f FileState) bool { return f.Path == e.Path })
			if j >= 0 {
				// A file an earlier install changed keeps its first backup: an
				// uninstall goes back to before the first install. Unless it
				// was changed since that install wrote it: the backup lacks
				// what the user (or the host) wrote meanwhile.
				if hash(e.Before) != st.Files[j].After {
					st.Files[j].Edited = true
				}
				st.Files[j].After = fs.After
				continue
			}
			if e.Before == nil {
				fs.Created = true
			} else {
				fs.Backup = filepath.Join(o.StateDir, "backups", fmt.Sprintf("%s-%s-%d-%s", p.Host, stamp, i, filepath.Base(e.Path)))
				if err := os.WriteFile(fs.Backup, e.Before, 0o600); err != nil {
					return fmt.Errorf("writing the backup of %s: %w", e.Path, err)
				}
			}
			st.Files = append(st.Files, fs)
		}
		return writeState(o, st)
	})
}

// writeEdits is the one way install and uninstall write host files. Each
// edit was planned on the bytes of its file as read (Before; nil when it
// did not exist), so it refuses edits two of which land on one file
// (distinctFiles), and stops when a file is no longer as read (a host
// rewrote it meanwhile): writing then would lose that change. Only then
// does it run first (the record, the backups) and write each file, or
// remove it when After is nil. what names the command in its errors.
func writeEdits(what string, edits []FileEdit, first func() error) error {
	if err := distinctFiles(what, edits); err != nil {
		return err
	}
	for _, e := range edits {
		cur, err := os.ReadFile(e.Path)
		if errors.Is(err, os.ErrNotExist) {
			cur = nil
		} else if err != nil {
			return fmt.Errorf("reading %s: %w", e.Path, err)
		}
		if !bytes.Equal(cur, e.Before) || (cur == nil) != (e.Before == nil) {
			return fmt.Errorf("%s changed while %s was planning; nothing was written: run %s again", e.Path, what, what)
		}
	}
	if first != nil {
		if err := first(); err != nil {
			return err
		}
	}
	for _, e := range edits {
		if e.After == nil {
			if err := os.Remove(e.Path); err != nil {
				return fmt.Errorf("removing %s: %w", e.Path, err)
			}
			continue
		}
		if err := writeFileAtomic(e.Path, e.After); err != nil {
			return err
		}
	}
	return nil
}

// distinctFiles refuses edits two of which land on one file: each
// edit was planned on the file's bytes before the other, so the second
// write would undo the first. A file a repository controls (its
// .claude/settings.local.json) can be a link to any other (the host's
// .claude.json, the servers file): the edit made through it would put the
// moved servers back and take the gate out, after install said it was
// done.
func distinctFiles(what string, edits []FileEdit) error {
	seen := map[string]string{}
	for _, e := range edits {
		real := realPath(e.Path)
		if first, ok := seen[real]; ok {
			return fmt.Errorf("%s and %s are the same file (%s), through a link: %s would write one edit over the other; nothing was written: remove the link", first, e.Path, real, what)
		}
		seen[real] = e.Path
	}
	return nil
}

// realPath is path with every link resolved, as far as it exists.
func realPath(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir := filepath.Dir(path)
	if dir == path {
		return path
	}
	return filepath.Join(realPath(dir), filepath.Base(path))
}

func writeState(o Options, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return err
	}
	return writeFileAtomic(o.statePath(st.Host), append(data, '\n'))
}

// writeFileAtomic replaces path through a temporary file and a rename, so a
// host reading its config never sees half of it, and keeps the file's mode.
func writeFileAtomic(path string, data []byte) error {
	// A config kept elsewhere and linked into place (dotfile managers) is
	// written where it lives: renaming over the link would replace it.
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%s is a link that does not resolve: %w", path, err)
		}
		path = target
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".mcp-gate-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), mode)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
