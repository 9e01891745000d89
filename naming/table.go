package naming

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Key is a tool (or prompt) by its original names: Server is the key of the
// servers file, Name the upstream's own name for the tool.
type Key struct{ Server, Name string }

// PolicyName returns the key's policy spelling, "mcp:<server>:<name>".
func (k Key) PolicyName() string { return PolicyName(k.Server, k.Name) }

// String returns the policy spelling, the one humans and logs should see.
func (k Key) String() string { return k.PolicyName() }

func compareKeys(a, b Key) int {
	if c := cmp.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Table maps keys to wire names and back. It is immutable once built, so
// any number of goroutines may call its methods at once; rebuild it when
// the catalog changes. The nil *Table is empty.
type Table struct {
	budget int
	wire   map[Key]string
	keys   map[string]Key
	sorted []Key // every key once, in (Server, Name) order
}

// Build returns the table of keys under budget, which must be at least
// MinBudget (take it from Budget after ValidateGateName); a smaller budget
// is a programming error and panics. Duplicate keys are ignored and the
// order of keys does not matter. A key whose server is not a valid server
// key is treated as sanitised even when its spelling needs no change (it
// loses ties to plain names); every key still gets a unique wire name within
// budget. See the package doc for the forms and their stability.
func Build(budget int, keys []Key) *Table {
	return build(budget, keys, sha256Hex)
}

// sha256Hex is the hash behind the suffix. The NUL separator keeps the
// input unambiguous for every valid server key (they cannot contain NUL),
// and keeps the suffix reproducible by hand:
// printf 'github\0create_issue' | sha256sum.
func sha256Hex(k Key) string {
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Name))
	return hex.EncodeToString(sum[:])
}

// pending is a key on its way to a hashed name.
type pending struct {
	key   Key
	plain string // the sanitised spelling, possibly over budget
	hash  string // at least maxHashLen hex digits
	n     int    // current suffix length
	name  string // current candidate
}

// build is Build with the hash injectable, so tests can force every
// collision path.
func build(budget int, keys []Key, hash func(Key) string) *Table {
	if budget < MinBudget {
		panic(fmt.Sprintf("naming: wire-name budget %d is below the minimum %d; validate the gate name before building a table", budget, MinBudget))
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, compareKeys)
	sorted = slices.Compact(sorted)

	t := &Table{
		budget: budget,
		wire:   make(map[Key]string, len(sorted)),
		keys:   make(map[string]Key, len(sorted)),
		sorted: sorted,
	}
	assign := func(k Key, name string) {
		t.wire[k] = name
		t.keys[name] = k
	}

	// Plain names first: they are collision-free among themselves (a valid
	// server key has no '_') and always keep their spelling.
	type sanitised struct {
		key   Key
		plain string
	}
	var mangled []sanitised
	var hashed []*pending
	for _, k := range sorted {
		plain, changed := spell(k)
		switch {
		case !changed && len(plain) <= budget && isServerKey(k.Server):
			assign(k, plain)
		case len(plain) <= budget:
			mangled = append(mangled, sanitised{k, plain})
		default:
			hashed = append(hashed, newPending(k, plain, budget, hash))
		}
	}

	// A sanitised spelling survives only if nothing else claims the same
	// string: no plain name, no other sanitised key, no over-budget key's
	// first hashed candidate. Losers are all hashed, so no mangled key ever
	// inherits another's spelling.
	claims := make(map[string]int, len(mangled)+len(hashed))
	for _, m := range mangled {
		claims[m.plain]++
	}
	for _, p := range hashed {
		claims[p.name]++
	}
	for _, m := range mangled {
		if _, taken := t.keys[m.plain]; !taken && claims[m.plain] == 1 {
			assign(m.key, m.plain)
			continue
		}
		hashed = append(hashed, newPending(m.key, m.plain, budget, hash))
	}

	// Hashed candidates: every key whose candidate is taken or shared grows
	// its suffix by one digit, all at once, until nothing clashes. Moving
	// all parties of a clash keeps the result independent of input order
	// and never hands one key's name to another.
	var stuck []*pending
	active := hashed
	for {
		count := make(map[string]int, len(active))
		for _, p := range active {
			count[p.name]++
		}
		clash := false
		next := active[:0:0]
		for _, p := range active {
			_, taken := t.keys[p.name]
			if !taken && count[p.name] == 1 {
				next = append(next, p)
				continue
			}
			clash = true
			if p.n == maxHashLen {
				stuck = append(stuck, p)
				continue
			}
			p.n++
			p.name = hashedName(p.plain, p.hash[:p.n], budget)
			next = append(next, p)
		}
		active = next
		if !clash {
			break
		}
	}
	for _, p := range active {
		assign(p.key, p.name)
	}

	// Last resort, reached only by a 64-bit SHA-256 prefix collision with
	// the same head: walk the 16-digit suffixes upward from the key's own,
	// in sorted key order so the outcome is deterministic. A free value
	// exists because the table holds fewer than 2^64 names.
	slices.SortFunc(stuck, func(a, b *pending) int { return compareKeys(a.key, b.key) })
	for _, p := range stuck {
		v, err := strconv.ParseUint(p.hash[:maxHashLen], 16, 64)
		if err != nil {
			panic(fmt.Sprintf("naming: hash %q is not hex: %v", p.hash, err))
		}
		for {
			v++
			name := hashedName(p.plain, fmt.Sprintf("%0*x", maxHashLen, v), budget)
			if _, taken := t.keys[name]; !taken {
				assign(p.key, name)
				break
			}
		}
	}
	return t
}

func newPending(k Key, plain string, budget int, hash func(Key) string) *pending {
	h := hash(k)
	if len(h) < maxHashLen {
		panic(fmt.Sprintf("naming: hash %q has fewer than %d digits", h, maxHashLen))
	}
	return &pending{key: k, plain: plain, hash: h, n: HashLen, name: hashedName(plain, h[:HashLen], budget)}
}

// hashedName is plain cut to leave room for "_" and suffix within budget.
// plain is ASCII (sanitised), so cutting at a byte is safe.
func hashedName(plain, suffix string, budget int) string {
	head := plain
	if limit := budget - 1 - len(suffix); len(head) > limit {
		head = head[:limit]
	}
	return head + "_" + suffix
}

// spell returns the sanitised spelling "<server>__<tool>" and whether
// sanitising changed anything.
func spell(k Key) (string, bool) {
	s, sc := sanitise(k.Server)
	n, nc := sanitise(k.Name)
	return s + serverSep + n, sc || nc
}

// sanitise replaces every rune outside [A-Za-z0-9_-] with '_', one '_' per
// rune so "é" and "e" differ in length, and one per byte of invalid UTF-8.
func sanitise(s string) (string, bool) {
	i := firstNonWire(s)
	if i < 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		if isWireByte(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteByte('_')
		i += size
	}
	return b.String(), true
}

// Wire returns the wire name of k, and whether the table holds k. It does
// not allocate.
func (t *Table) Wire(k Key) (string, bool) {
	if t == nil {
		return "", false
	}
	w, ok := t.wire[k]
	return w, ok
}

// Lookup returns the key whose wire name is wire, and whether there is one.
// It does not allocate.
func (t *Table) Lookup(wire string) (Key, bool) {
	if t == nil {
		return Key{}, false
	}
	k, ok := t.keys[wire]
	return k, ok
}

// Len returns the number of keys in the table.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.sorted)
}

// Budget returns the budget the table was built for.
func (t *Table) Budget() int {
	if t == nil {
		return 0
	}
	return t.budget
}

// All yields every key and its wire name in (Server, Name) order.
func (t *Table) All() iter.Seq2[Key, string] {
	return func(yield func(Key, string) bool) {
		if t == nil {
			return
		}
		for _, k := range t.sorted {
			if !yield(k, t.wire[k]) {
				return
			}
		}
	}
}
