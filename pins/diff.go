package pins

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// Change is one difference between a pinned definition and the one listed
// now: a value at Path (object keys and array indexes, from the top of the
// definition) that was added, removed or changed. Before and After are the
// values' compact JSON ("" when absent). Everything in a Change is the
// upstream's text: whoever shows it quotes and bounds it.
type Change struct {
	Path          []string
	Before, After string
}

// MaxChanges is the most changes Diff returns; it says how many more there
// are.
const MaxChanges = 40

// Diff lists what differs between two definitions, path by path, in path
// order: scalars, arrays of scalars (shown whole, so a new required
// argument reads as one line) and empty objects or arrays are leaves. It
// returns at most MaxChanges changes and the number of others. A
// definition that is not JSON counts as one opaque value.
func Diff(before, after json.RawMessage) ([]Change, int) {
	a, b := leaves(before), leaves(after)
	paths := map[string][]string{}
	for k, l := range a {
		paths[k] = l.path
	}
	for k, l := range b {
		paths[k] = l.path
	}
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Change
	more := 0
	for _, k := range keys {
		x, y := a[k].value, b[k].value
		if x == y {
			continue
		}
		if len(out) >= MaxChanges {
			more++
			continue
		}
		out = append(out, Change{Path: paths[k], Before: x, After: y})
	}
	return out, more
}

// Index is the Path segment of an array element: it starts with a
// character no Go string of a key of the same path can make ambiguous,
// since readers tell indexes by IsIndex.
func Index(i int) string { return "\x00[" + strconv.Itoa(i) + "]" }

// IsIndex reports whether a Path segment is an array index, and which.
func IsIndex(seg string) (int, bool) {
	if len(seg) < 4 || seg[0] != 0 || seg[1] != '[' || seg[len(seg)-1] != ']' {
		return 0, false
	}
	n, err := strconv.Atoi(seg[2 : len(seg)-1])
	return n, err == nil
}

type leaf struct {
	path  []string
	value string
}

// leaves flattens a definition into its leaves, keyed by a string form of
// their path that cannot collide (each segment quoted).
func leaves(def json.RawMessage) map[string]leaf {
	out := map[string]leaf{}
	if len(bytes.TrimSpace(def)) == 0 {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		out[""] = leaf{value: string(def)}
		return out
	}
	walk(v, nil, "", out, 0)
	return out
}

// walk adds v's leaves; key is path's unambiguous string form (object keys
// quoted, indexes bare).
func walk(v any, path []string, key string, out map[string]leaf, depth int) {
	add := func(v any) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			b.Reset()
			b.WriteString(`"?"`)
		}
		out[key] = leaf{path: path, value: string(bytes.TrimRight(b.Bytes(), "\n"))}
	}
	if depth > 64 {
		add(v)
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			add(x)
			return
		}
		for k, e := range x {
			walk(e, append(path[:len(path):len(path)], k), key+strconv.Quote(k), out, depth+1)
		}
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if scalars {
			add(x)
			return
		}
		for i, e := range x {
			walk(e, append(path[:len(path):len(path)], Index(i)), key+"["+strconv.Itoa(i)+"]", out, depth+1)
		}
	default:
		add(x)
	}
}
