package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The tests restate the rules with regular expressions and crypto/sha256
// instead of calling the package's own helpers, so a bug in those helpers
// cannot hide itself.
var (
	hostNameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	wireRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	serverKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	hashTailRE  = regexp.MustCompile(`_[0-9a-f]{8,16}$`)
)

// isPlain reports whether k must keep "<server>__<tool>" under budget.
func isPlain(k Key, budget int) bool {
	plain := k.Server + "__" + k.Name
	return serverKeyRE.MatchString(k.Server) && wireRE.MatchString(plain) && len(plain) <= budget
}

// wantHashed is the documented hashed form with an n-digit suffix, computed
// independently of the package.
func wantHashed(t testing.TB, k Key, n, budget int) string {
	t.Helper()
	var b strings.Builder
	for _, r := range k.Server + "\x00" + k.Name {
		switch {
		case r == 0:
			b.WriteString("__")
		case r < 128 && wireRE.MatchString(string(r)):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	head := b.String()
	if limit := budget - 1 - n; len(head) > limit {
		head = head[:limit]
	}
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Name))
	return head + "_" + hex.EncodeToString(sum[:])[:n]
}

// checkTable asserts the invariants every table must hold for keys under
// the gate names given (each must produce tab's budget or less).
func checkTable(t testing.TB, tab *Table, keys []Key, gates ...string) {
	t.Helper()
	distinct := map[Key]bool{}
	for _, k := range keys {
		distinct[k] = true
	}
	if tab.Len() != len(distinct) {
		t.Fatalf("Len() = %d, want %d distinct keys", tab.Len(), len(distinct))
	}
	owners := map[string]Key{}
	for k := range distinct {
		w, ok := tab.Wire(k)
		if !ok {
			t.Fatalf("Wire(%#v) missing", k)
		}
		if len(w) > tab.Budget() {
			t.Errorf("Wire(%#v) = %q, %d characters over budget %d", k, w, len(w), tab.Budget())
		}
		for _, g := range gates {
			if full := "mcp__" + g + "__" + w; !hostNameRE.MatchString(full) {
				t.Errorf("host name %q for %#v does not match %s", full, k, hostNameRE)
			}
		}
		if prev, dup := owners[w]; dup {
			t.Fatalf("wire name %q given to both %#v and %#v", w, prev, k)
		}
		owners[w] = k
		if got, ok := tab.Lookup(w); !ok || got != k {
			t.Errorf("Lookup(%q) = %#v, %v; want %#v", w, got, ok, k)
		}
		if isPlain(k, tab.Budget()) && w != k.Server+"__"+k.Name {
			t.Errorf("Wire(%#v) = %q; want the plain form", k, w)
		}
		if !isPlain(k, tab.Budget()) && w == k.Server+"__"+k.Name && serverKeyRE.MatchString(k.Server) {
			t.Errorf("Wire(%#v) = %q is the plain form for a key that is not plain", k, w)
		}
		if ValidateServerKey(k.Server, tab.Budget()) == nil && !strings.HasPrefix(w, k.Server+"__") {
			t.Errorf("Wire(%#v) = %q lost its server prefix", k, w)
		}
	}
	if got := slices.Collect(maps.Keys(maps.Collect(tab.All()))); len(got) != len(distinct) {
		t.Errorf("All() yielded %d keys, want %d", len(got), len(distinct))
	}
}

// sameTable asserts a and b map the same keys to the same names.
func sameTable(t testing.TB, a, b *Table) {
	t.Helper()
	am, bm := maps.Collect(a.All()), maps.Collect(b.All())
	if !maps.Equal(am, bm) {
		for k, w := range am {
			if bm[k] != w {
				t.Errorf("%#v: %q in one table, %q in the other", k, w, bm[k])
			}
		}
		t.Fatalf("tables differ (%d and %d entries)", len(am), len(bm))
	}
}
