package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Uninstall undoes the recorded install of host. A file still exactly as
// install left it gets its backup back, byte for byte (or is removed, when
// install created it). A file changed since is edited back record by
// record: the gate's entry goes if it is still the one install wrote, each
// moved server comes back if its name is free, and each name install
// disabled is enabled again; what cannot be undone is reported. The edits
// are written as install's are (writeEdits): two that land on one file (a
// settings file linked since to another) are refused, and nothing is
// written. It returns the notes, and removes the record.
func Uninstall(o Options, host string, dryRun bool) (edits []FileEdit, notes []string, err error) {
	st, err := LoadState(o, host)
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return nil, nil, fmt.Errorf("no install of %s is recorded in %s", host, o.StateDir)
	}
	for _, fs := range st.Files {
		cur, rerr := os.ReadFile(fs.Path)
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("reading %s: %w", fs.Path, rerr)
		}
		if rerr == nil && hash(cur) == fs.After && !fs.Edited {
			var back []byte
			if !fs.Created {
				if back, err = os.ReadFile(fs.Backup); err != nil {
					return nil, nil, fmt.Errorf("reading the backup of %s: %w", fs.Path, err)
				}
			}
			edits = append(edits, FileEdit{Path: fs.Path, Before: cur, After: back})
			continue
		}
		if rerr != nil {
			notes = append(notes, fmt.Sprintf("%s no longer exists; nothing to undo there", fs.Path))
			continue
		}
		if hash(cur) == fs.After {
			notes = append(notes, fmt.Sprintf("%s changed between two installs; undoing install's own edits one by one", fs.Path))
		} else {
			notes = append(notes, fmt.Sprintf("%s changed since install; undoing install's own edits one by one", fs.Path))
		}
		var after []byte
		var ns []string
		if strings.HasSuffix(fs.Path, ".toml") {
			after, ns, err = undoTOML(cur, fs.Path, st)
		} else {
			after, ns, err = undoJSON(cur, fs.Path, st)
		}
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, ns...)
		if string(after) != string(cur) {
			edits = append(edits, FileEdit{Path: fs.Path, Before: cur, After: after})
		}
	}
	if dryRun {
		// What uninstall would refuse to write, a dry run refuses too.
		if err := distinctFiles("uninstall", edits); err != nil {
			return nil, nil, err
		}
		return edits, notes, nil
	}
	if err := writeEdits("uninstall", edits, nil); err != nil {
		return nil, nil, err
	}
	if err := os.Remove(o.statePath(host)); err != nil {
		return nil, nil, fmt.Errorf("removing the install record: %w", err)
	}
	return edits, notes, nil
}

// removeUnchanged deletes what r records install added, if it is still
// there as install wrote it. It reports false only when the entry is there
// but changed since: the user's edit stays. An entry already gone is fine.
func removeUnchanged(tree *Node, r Record) bool {
	obj := lookup(tree, r.Path)
	e := obj.Get(r.Name)
	if e == nil {
		return true
	}
	if e.Compact() != r.Value {
		return false
	}
	obj.Delete(r.Name)
	return true
}

func undoJSON(cur []byte, path string, st *State) ([]byte, []string, error) {
	var notes []string
	style := styleOf(cur)
	tree, err := ParseTree(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	// What install added goes, newest first, unless the user changed it
	// since: then it stays, and the note says so.
	for _, added := range []struct {
		records []Record
		changed string // the note's format: the file, the entry's name
	}{
		{st.Gate, "%s: %q was changed after install; left as it is"},
		{st.Added, "%s: server %q was changed after install; left in the servers file"},
	} {
		for _, r := range slices.Backward(added.records) {
			if r.File == path && !removeUnchanged(tree, r) {
				notes = append(notes, fmt.Sprintf(added.changed, path, r.Name))
			}
		}
	}
	for _, r := range slices.Backward(st.Moved) {
		if r.File != path {
			continue
		}
		obj, err := ensure(tree, r.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj.Get(r.Name) != nil {
			notes = append(notes, fmt.Sprintf("%s: %q is registered again since install; the moved entry was not put back", path, r.Name))
			continue
		}
		v, err := ParseTree([]byte(r.Value))
		if err != nil {
			return nil, nil, fmt.Errorf("install record: %w", err)
		}
		obj.Insert(r.Index, r.Name, v)
	}
	for _, r := range st.Disabled {
		if r.File != path {
			continue
		}
		parent := lookup(tree, r.Path[:len(r.Path)-1])
		list := parent.Get(r.Path[len(r.Path)-1])
		if list == nil || list.Kind != '[' {
			continue
		}
		want := r.Value // an entry install added ({"serverName": ...})
		if want == "" {
			want = Leaf(r.Name).Compact() // a name
		}
		if i := ownEntry(list.Elems, want, r.List); i >= 0 {
			list.Elems = slices.Delete(list.Elems, i, i+1)
		} else if slices.ContainsFunc(list.Elems, func(e *Node) bool { return e.Compact() == want }) {
			notes = append(notes, fmt.Sprintf("%s: %s in %s was added again after install (it comes after entries written since install, or after one install added after it), so it is yours and stays; remove it by hand if you no longer want it", path, want, strings.Join(r.Path, ".")))
		}
	}
	return tree.Encode(style.indent, style.newline), notes, nil
}

// ownEntry is the index of the element of list that install added as
// want, or -1. The list as install left it (was; nil in records of older
// installs) tells it from an equal entry the user wrote after install.
// Entries are written at a list's end, so want's first equal element is
// the user's when it comes after an element that followed install's entry
// in was (install's was taken away and written again at the end), or
// after more entries was did not hold than can stand for the ones between
// it and the last entry still there of those that preceded install's (the
// user wrote others after install, then want again). An entry the user
// added before those, or one of them the user edited, is not such a sign.
// An entry taken away and written again in the same place is
// indistinguishable from install's own, and goes.
func ownEntry(list []*Node, want string, was []string) int {
	i := slices.IndexFunc(list, func(e *Node) bool { return e.Compact() == want })
	k := slices.Index(was, want)
	if i < 0 || was == nil || k < 0 {
		return i
	}
	q, added := -1, 0 // was's index of the last of its entries before want, and the new ones since
	for _, e := range list[:i] {
		c := e.Compact()
		switch j := slices.Index(was, c); {
		case j > k:
			return -1
		case j >= 0:
			q, added = j, 0
		default:
			added++
		}
	}
	if added > k-q-1 {
		return -1
	}
	return i
}

func undoTOML(cur []byte, path string, st *State) ([]byte, []string, error) {
	var notes []string
	text := string(cur)
	var doc map[string]any
	if err := toml.Unmarshal(cur, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	for _, r := range st.Gate {
		if r.File != path {
			continue
		}
		var want map[string]any
		_ = toml.Unmarshal([]byte(r.Value), &want)
		ws, _ := want["mcp_servers"].(map[string]any)
		if cur, ok := servers[r.Name]; ok && reflect.DeepEqual(cur, ws[r.Name]) {
			text, _, _ = cutTOMLTables(text, "mcp_servers", r.Name)
			delete(servers, r.Name)
		} else if ok {
			notes = append(notes, fmt.Sprintf("%s: mcp_servers.%s was changed after install; left as it is", path, r.Name))
		}
	}
	for _, r := range st.Moved {
		if r.File != path {
			continue
		}
		if _, taken := servers[r.Name]; taken {
			notes = append(notes, fmt.Sprintf("%s: mcp_servers.%s is registered again since install; the moved table was not put back", path, r.Name))
			continue
		}
		trimmed := strings.TrimRight(text, "\n")
		if trimmed != "" {
			trimmed += "\n\n"
		}
		text = trimmed + r.Value
	}
	var check map[string]any
	if err := toml.Unmarshal([]byte(text), &check); err != nil {
		return nil, nil, fmt.Errorf("%s: undoing the install as text gave invalid TOML (%v); nothing was written", path, err)
	}
	return []byte(text), notes, nil
}
