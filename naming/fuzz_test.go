package naming

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// splitPairs turns fuzz input into keys: one key a line, server and tool
// separated by the first tab; a line without a tab is a tool of server "s",
// so that valid server keys stay common.
func splitPairs(data string) []Key {
	var keys []Key
	for line := range strings.SplitSeq(data, "\n") {
		server, tool, ok := strings.Cut(line, "\t")
		if !ok {
			server, tool = "s", line
		}
		keys = append(keys, Key{server, tool})
		if len(keys) == 64 {
			break
		}
	}
	return keys
}

func FuzzBuild(f *testing.F) {
	long := strings.Repeat("x", 70)
	for _, seed := range []struct{ data, gate string }{
		{"github\tcreate_issue\ngithub\tget_file", "gate"},
		{"a.b\na_b\na:b\na b", "gate"},
		{"srv\t" + long + "1\nsrv\t" + long + "2\nsrv\t" + long + "1", "my-gate"},
		{"fs\t日本語\nfs\t___\nfs\t\xff\xfe\xfd", "g"},
		{"a_\tb\na\t_b\n\t\n\tx", strings.Repeat("g", MaxGateNameLen)},
		{"s\t\ns\t_\nGitHub\tx\nmcp\tgate__a__b\na\tb", "gate"},
		{"x.y\tz\nx:y\tz\nx\ty__z", "bad gate"},
	} {
		f.Add(seed.data, seed.gate)
	}
	// Catalogs that reach the extension path with the real hash: a plain
	// tool and a sanitised tool spelled like an over-budget tool's hashed
	// name. The fuzzer cannot compute SHA-256, so these come from here.
	for _, gate := range []string{"gate", "a-much-longer-gate-name"} {
		over := Key{"srv", strings.Repeat("z_", 40)}
		hashed := wantHashed(f, over, HashLen, Budget(gate))
		mimic := strings.TrimPrefix(hashed, "srv__")
		dotted := strings.Replace(mimic, "_", ".", 1)
		f.Add("srv\t"+over.Name+"\nsrv\t"+mimic+"\nsrv\t"+dotted, gate)
		f.Add("srv\t"+over.Name+"\nsrv\t"+dotted, gate)
	}
	f.Fuzz(func(t *testing.T, data, gate string) {
		keys := splitPairs(data)
		gates := []string{DefaultGateName}
		if gate != DefaultGateName && ValidateGateName(gate) == nil {
			gates = append(gates, gate)
		}
		for _, g := range gates {
			budget := Budget(g)
			tab := Build(budget, keys)
			checkTable(t, tab, keys, g)

			// Deterministic under permutation and duplication.
			perm := slices.Clone(keys)
			slices.Reverse(perm)
			if len(perm) > 2 {
				perm = slices.Concat(perm[len(perm)/3:], perm[:len(perm)/3])
			}
			sameTable(t, tab, Build(budget, append(perm, keys[:len(keys)/2]...)))

			checkSubsetStability(t, budget, keys[:len(keys)/2], tab)
			checkSpellings(t, tab, g)
		}
	})
}

// checkSubsetStability compares full with the table of a subset: plain
// names are identical, and a name that changed owner went to a key the
// subset lacks. (The latter could fail only if the input contained another
// key's SHA-256 digits, which a fuzzer cannot compute.)
func checkSubsetStability(t *testing.T, budget int, sub []Key, full *Table) {
	t.Helper()
	subTab := Build(budget, sub)
	for k, w := range subTab.All() {
		got, _ := full.Wire(k)
		if isPlain(k, budget) && got != w {
			t.Errorf("plain %#v is %q alone and %q in a larger catalog", k, w, got)
		}
		owner, ok := full.Lookup(w)
		if !ok || owner == k {
			continue
		}
		if _, wasThere := subTab.Wire(owner); wasThere {
			t.Errorf("wire name %q moved from %#v to %#v, which was already in the catalog", w, k, owner)
		}
	}
}

// checkSpellings asserts that every spelling of every key resolves to it
// through the table, and that ParseSpelling is exact on plain names.
func checkSpellings(t *testing.T, tab *Table, gate string) {
	t.Helper()
	prefix := "mcp__" + gate + "__"
	for k, w := range tab.All() {
		if got, err := tab.Resolve(prefix+w, gate); err != nil || got != k {
			t.Errorf("Resolve(%q) = %#v, %v; want %#v", prefix+w, got, err, k)
		}
		if got, err := tab.Resolve(w, gate); err != nil || got != k {
			if _, shadowed := tab.Lookup(strings.TrimPrefix(w, prefix)); !strings.HasPrefix(w, prefix) || !shadowed {
				t.Errorf("Resolve(%q) = %#v, %v; want %#v", w, got, err, k)
			}
		}
		if serverKeyRE.MatchString(k.Server) {
			if got, err := tab.Resolve(k.PolicyName(), gate); err != nil || got != k {
				t.Errorf("Resolve(%q) = %#v, %v; want %#v", k.PolicyName(), got, err, k)
			}
		}
		if isPlain(k, tab.Budget()) && !strings.HasPrefix(w, "mcp__") {
			got, err := ParseSpelling(w, gate)
			switch {
			case err == nil && got != k:
				t.Errorf("ParseSpelling(%q) = %#v; want %#v", w, got, k)
			case err != nil && !errors.Is(err, ErrHashedWireName):
				t.Errorf("ParseSpelling(%q) of a plain name: %v", w, err)
			case err != nil && !hashTailRE.MatchString(k.Name):
				t.Errorf("ParseSpelling(%q) called a tool without a hash-shaped tail hashed", w)
			}
		}
	}
}

func FuzzParseSpelling(f *testing.F) {
	for _, seed := range []struct{ s, gate string }{
		{"mcp:github:create_issue", "gate"},
		{"mcp:fs:a:b", "gate"},
		{"mcp:fs:", "gate"},
		{"mcp:", "gate"},
		{"mcp:GitHub:x", "gate"},
		{"github__create_issue", "gate"},
		{"mcp__gate__github__create_issue", "gate"},
		{"mcp__my-gate__fs__a__b", "my-gate"},
		{"mcp__other__fs__x", "gate"},
		{"github__create_1a2b3c4d", "gate"},
		{"github__create_0123456789abcdef0", "gate"},
		{"a_b__c", "gate"},
		{"mcp__tool", "gate"},
		{"", ""},
		{"fs__é", "g_g"},
	} {
		f.Add(seed.s, seed.gate)
	}
	f.Fuzz(func(t *testing.T, s, gate string) {
		got, err := ParseSpelling(s, gate)
		if res, rerr := (*Table)(nil).Resolve(s, gate); res != got || (rerr == nil) != (err == nil) {
			t.Errorf("Resolve without a catalog = %#v, %v; ParseSpelling = %#v, %v", res, rerr, got, err)
		}
		if err != nil {
			if got != (Key{}) || err.Error() == "" {
				t.Errorf("ParseSpelling(%q, %q) = %#v, %q", s, gate, got, err)
			}
			if errors.Is(err, ErrHashedWireName) && !hashTailRE.MatchString(s) {
				t.Errorf("ParseSpelling(%q) called a name without a hash-shaped tail hashed", s)
			}
			return
		}
		if !serverKeyRE.MatchString(got.Server) {
			t.Errorf("ParseSpelling(%q) = server %q, not a server key", s, got.Server)
		}
		if strings.HasPrefix(s, "mcp:") {
			// The printed spelling escapes glob characters, and reads
			// back to the same key; s itself may leave them unescaped.
			pn := PolicyName(got.Server, got.Name)
			if back, err := ParseSpelling(pn, gate); err != nil || back != got {
				t.Errorf("ParseSpelling(%q) = %#v, which spells %q, which reads back as %#v, %v", s, got, pn, back, err)
			}
			if u, err := Unescape(strings.TrimPrefix(s, "mcp:"+got.Server+":")); err != nil || u != got.Name {
				t.Errorf("ParseSpelling(%q) = %#v; the tool is not the rest of the name unescaped", s, got)
			}
			return
		}
		if ValidateGateName(gate) != nil {
			t.Errorf("ParseSpelling(%q) accepted the invalid gate name %q", s, gate)
		}
		if w := got.Server + "__" + got.Name; s != w && s != "mcp__"+gate+"__"+w {
			t.Errorf("ParseSpelling(%q) = %#v, which spells %q", s, got, w)
		}
		if !wireRE.MatchString(got.Server+"__"+got.Name) || hashTailRE.MatchString(got.Name) {
			t.Errorf("ParseSpelling(%q) = %#v: not a plain wire name", s, got)
		}
	})
}
