package naming

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSanitise(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"read_file", "read_file"},
		{"read-File9", "read-File9"},
		{"read.file", "read_file"},
		{"a b:c/d", "a_b_c_d"},
		{"é", "_"},         // one rune, two bytes: one '_'
		{"日本語", "___"},     // one '_' per rune
		{"👍x", "_x"},       // four bytes, one rune
		{"\xff\xfe", "__"}, // invalid UTF-8: one '_' per byte
		{"a\x00b", "a_b"},
		{"\u200bzero", "_zero"},
	} {
		got, changed := sanitise(tc.in)
		if got != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("sanitise(%q) = %q, %v; want %q, %v", tc.in, got, changed, tc.want, tc.in != tc.want)
		}
	}
}

func TestBuildForms(t *testing.T) {
	const budget = 53
	long := strings.Repeat("x", 60)
	fits := strings.Repeat("y", budget-len("srv__"))
	over := fits + "y"
	for _, tc := range []struct {
		name string
		key  Key
		want string // "" means the 8-digit hashed form
	}{
		{"plain", Key{"github", "create_issue"}, "github__create_issue"},
		{"plain with dash and caps", Key{"my-srv", "Get-Thing_2"}, "my-srv__Get-Thing_2"},
		{"plain tool with double underscore", Key{"fs", "a__b"}, "fs__a__b"},
		{"empty tool", Key{"fs", ""}, "fs__"},
		{"dot", Key{"fs", "read.file"}, "fs__read_file"},
		{"colon", Key{"fs", "a:b"}, "fs__a_b"},
		{"unicode", Key{"fs", "日本語"}, "fs_____"},
		{"emoji", Key{"fs", "👍"}, "fs___"},
		{"invalid utf-8", Key{"fs", "a\xffb"}, "fs__a_b"},
		{"exactly the budget", Key{"srv", fits}, "srv__" + fits},
		{"one over the budget", Key{"srv", over}, ""},
		{"far over the budget", Key{"srv", long}, ""},
		{"over the budget and unicode", Key{"srv", "é" + long}, ""},
		{"uppercase server is not a key, kept sanitised", Key{"GitHub", "x"}, "GitHub__x"},
		{"server with a dot", Key{"a.b", "x"}, "a_b__x"},
		{"empty server", Key{"", "x"}, "__x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = wantHashed(t, tc.key, HashLen, budget)
			}
			tab := Build(budget, []Key{tc.key})
			got, ok := tab.Wire(tc.key)
			if !ok || got != want {
				t.Fatalf("Wire(%#v) = %q, %v; want %q", tc.key, got, ok, want)
			}
			if tc.want == "" && len(got) != budget {
				t.Errorf("hashed name %q is %d characters; an over-budget name should use the whole budget %d", got, len(got), budget)
			}
			checkTable(t, tab, []Key{tc.key}, "gate")
		})
	}
}

// The hashed form is reproducible by hand: printf 'srv\0<tool>' | sha256sum.
func TestHashedFormIsDocumentedFormula(t *testing.T) {
	k := Key{"github", "create_pull_request_review_comment_with_suggestions_and_more"}
	w, _ := Build(53, []Key{k}).Wire(k)
	// sha256("github\x00create_pull_request_review_comment_with_suggestions_and_more")
	const want = "github__create_pull_request_review_comment_w_"
	if !strings.HasPrefix(w, want) || len(w) != 53 || !hashTailRE.MatchString(w) {
		t.Fatalf("Wire = %q; want %q followed by 8 hex digits", w, want)
	}
	if w != wantHashed(t, k, 8, 53) {
		t.Fatalf("Wire = %q; want %q", w, wantHashed(t, k, 8, 53))
	}
}

func TestBuildCollisions(t *testing.T) {
	const budget = 53
	h := func(k Key) string { return wantHashed(t, k, HashLen, budget) }
	long := strings.Repeat("z", 70)
	overKey := Key{"srv", long}
	overName := h(overKey) // "srv__zzz…_<8 hex>"
	// A sanitised key spelled like overName: swap one '_' of the head for '.'.
	dotted := Key{"srv", strings.Replace(strings.TrimPrefix(overName, "srv__"), "z_", "z.", 1)}
	// A plain key spelled exactly like overName.
	mimic := Key{"srv", strings.TrimPrefix(overName, "srv__")}

	for _, tc := range []struct {
		name string
		keys []Key
		want map[Key]string
	}{
		{
			name: "plain beats sanitised",
			keys: []Key{{"srv", "a.b"}, {"srv", "a_b"}},
			want: map[Key]string{
				{"srv", "a_b"}: "srv__a_b",
				{"srv", "a.b"}: h(Key{"srv", "a.b"}),
			},
		},
		{
			name: "two sanitised: both hashed",
			keys: []Key{{"srv", "a.b"}, {"srv", "a:b"}},
			want: map[Key]string{
				{"srv", "a.b"}: h(Key{"srv", "a.b"}),
				{"srv", "a:b"}: h(Key{"srv", "a:b"}),
			},
		},
		{
			name: "plain and two sanitised",
			keys: []Key{{"srv", "a.b"}, {"srv", "a:b"}, {"srv", "a_b"}, {"srv", "a b"}},
			want: map[Key]string{
				{"srv", "a_b"}: "srv__a_b",
				{"srv", "a.b"}: h(Key{"srv", "a.b"}),
				{"srv", "a:b"}: h(Key{"srv", "a:b"}),
				{"srv", "a b"}: h(Key{"srv", "a b"}),
			},
		},
		{
			name: "invalid server key loses to plain",
			keys: []Key{{"a_", "b"}, {"a", "_b"}},
			want: map[Key]string{
				{"a", "_b"}: "a___b",
				{"a_", "b"}: h(Key{"a_", "b"}),
			},
		},
		{
			name: "sanitised spellings across servers",
			keys: []Key{{"a.", "b"}, {"a:", "b"}},
			want: map[Key]string{
				{"a.", "b"}: h(Key{"a.", "b"}),
				{"a:", "b"}: h(Key{"a:", "b"}),
			},
		},
		{
			name: "over-budget hashed spelling beats sanitised",
			keys: []Key{overKey, dotted},
			want: map[Key]string{
				overKey: overName,
				dotted:  h(dotted),
			},
		},
		{
			name: "plain beats hashed, which grows a digit",
			keys: []Key{overKey, mimic},
			want: map[Key]string{
				mimic:   overName,
				overKey: wantHashed(t, overKey, HashLen+1, budget),
			},
		},
		{
			name: "over-budget names sharing a head keep 8 digits",
			keys: []Key{{"srv", long + "1"}, {"srv", long + "2"}},
			want: map[Key]string{
				{"srv", long + "1"}: h(Key{"srv", long + "1"}),
				{"srv", long + "2"}: h(Key{"srv", long + "2"}),
			},
		},
		{
			name: "same tool on two servers",
			keys: []Key{{"a", "x.y"}, {"b", "x.y"}},
			want: map[Key]string{
				{"a", "x.y"}: "a__x_y",
				{"b", "x.y"}: "b__x_y",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := Build(budget, tc.keys)
			for k, want := range tc.want {
				if got, _ := tab.Wire(k); got != want {
					t.Errorf("Wire(%#v) = %q, want %q", k, got, want)
				}
			}
			checkTable(t, tab, tc.keys, "gate")
			rev := slices.Clone(tc.keys)
			slices.Reverse(rev)
			sameTable(t, tab, Build(budget, rev))
			sameTable(t, tab, Build(budget, append(rev, tc.keys...)))
		})
	}
}

// fakeHash returns a hash function that gives each key the listed digits,
// padded with zeros, so tests can force clashes that SHA-256 never shows.
func fakeHash(digits map[Key]string) func(Key) string {
	return func(k Key) string {
		return digits[k] + strings.Repeat("0", 64-len(digits[k]))
	}
}

func TestBuildHashExtension(t *testing.T) {
	const budget = 53
	long := strings.Repeat("z", 70)
	a, b, c := Key{"srv", long + "a"}, Key{"srv", long + "b"}, Key{"srv", long + "c"}
	head := func(n int) string { return ("srv__" + long)[:budget-1-n] }
	hash := fakeHash(map[Key]string{
		a: "1234567801",
		b: "1234567802",
		c: "9999999900",
	})
	keys := []Key{a, b, c}
	tab := build(budget, keys, hash)
	// a and b share 9 digits as well, so they grow to 10; c never clashed.
	want := map[Key]string{
		a: head(10) + "_1234567801",
		b: head(10) + "_1234567802",
		c: head(8) + "_99999999",
	}
	for k, w := range want {
		if got, _ := tab.Wire(k); got != w {
			t.Errorf("Wire(%q…) = %q, want %q", k.Name[len(long):], got, w)
		}
	}
	checkTable(t, tab, keys, "gate")
	slices.Reverse(keys)
	sameTable(t, tab, build(budget, keys, hash))
}

// With every hash equal, all candidates clash up to 16 digits and the keys
// fall through to the last resort: the next free 16-digit values, handed
// out in key order.
func TestBuildLastResort(t *testing.T) {
	const budget = MinBudget
	long := strings.Repeat("q", 40)
	var keys []Key
	for i := range 5 {
		keys = append(keys, Key{"s", fmt.Sprintf("%s%d", long, i)})
	}
	same := func(Key) string { return "abcd" + strings.Repeat("0", 60) }
	tab := build(budget, keys, same)
	checkTable(t, tab, keys, strings.Repeat("g", MaxGateNameLen))
	// At 16 digits the head is just "s__" (20 - 1 - 16 characters).
	for i, k := range keys {
		w, _ := tab.Wire(k)
		if want := fmt.Sprintf("s___abcd%012x", i+1); w != want {
			t.Errorf("Wire(keys[%d]) = %q, want %q", i, w, want)
		}
	}
	rev := slices.Clone(keys)
	slices.Reverse(rev)
	sameTable(t, tab, build(budget, rev, same))
}

// The walk skips values already taken by other names.
func TestBuildLastResortSkipsTaken(t *testing.T) {
	const budget = MinBudget
	long := strings.Repeat("q", 40)
	a, b := Key{"s", long + "a"}, Key{"s", long + "b"}
	taken := Key{"s", "_0000000000000001"} // plain "s___0000000000000001"
	hash := func(Key) string { return strings.Repeat("0", 64) }
	keys := []Key{a, b, taken}
	tab := build(budget, keys, hash)
	checkTable(t, tab, keys)
	for k, want := range map[Key]string{
		taken: "s___0000000000000001",
		a:     "s___0000000000000002",
		b:     "s___0000000000000003",
	} {
		if got, _ := tab.Wire(k); got != want {
			t.Errorf("Wire(%#v) = %q, want %q", k, got, want)
		}
	}
}

func TestBuildLongGateNames(t *testing.T) {
	for _, gate := range []string{"gate", "a-much-longer-gate-name", strings.Repeat("g", MaxGateNameLen)} {
		t.Run(gate, func(t *testing.T) {
			budget := Budget(gate)
			keys := []Key{
				{"github", "create_issue"},
				{"github", "create_pull_request_review_comment_with_suggestions"},
				{"x", "y"},
				{"x", "a very long tool name with spaces that will not fit anywhere"},
				{"a-server-key-that-is-far-too-long-for-small-budgets", "t"},
				{"x", strings.Repeat("é", 40)},
				{"x", ""},
			}
			tab := Build(budget, keys)
			checkTable(t, tab, keys, gate)
		})
	}
}

func TestBuildPanicsBelowMinBudget(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "below the minimum 20") {
			t.Fatalf("recover() = %v; want a panic naming the minimum", r)
		}
	}()
	Build(MinBudget-1, nil)
}

func TestNilAndEmptyTable(t *testing.T) {
	for _, tab := range []*Table{nil, Build(53, nil)} {
		if _, ok := tab.Wire(Key{"a", "b"}); ok {
			t.Error("Wire found a key in an empty table")
		}
		if _, ok := tab.Lookup("a__b"); ok {
			t.Error("Lookup found a name in an empty table")
		}
		if tab.Len() != 0 {
			t.Errorf("Len() = %d, want 0", tab.Len())
		}
		for k := range tab.All() {
			t.Errorf("All() yielded %#v", k)
		}
	}
}

func TestAllIsSortedAndStops(t *testing.T) {
	keys := []Key{{"b", "x"}, {"a", "z"}, {"a", "y"}, {"a", "y"}}
	tab := Build(53, keys)
	var got []Key
	for k, w := range tab.All() {
		if w2, _ := tab.Wire(k); w != w2 {
			t.Errorf("All() gave %q for %#v, Wire gives %q", w, k, w2)
		}
		got = append(got, k)
	}
	want := []Key{{"a", "y"}, {"a", "z"}, {"b", "x"}}
	if !slices.Equal(got, want) {
		t.Errorf("All() order = %v, want %v", got, want)
	}
	n := 0
	for range tab.All() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("All() kept yielding after break")
	}
}

// Stability: adding unrelated keys never renames plain names, hashed names
// of over-budget keys, or sanitised names nobody else spells; and a wire
// name that changes owner goes only to a newcomer.
func TestStabilityUnderAdditions(t *testing.T) {
	const budget = 53
	base := []Key{
		{"github", "create_issue"},
		{"github", "get.file"},
		{"github", strings.Repeat("long_", 20)},
		{"fs", "read_file"},
		{"fs", "write file"},
	}
	before := Build(budget, base)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		extra := slices.Clone(base)
		for range 1 + rng.IntN(20) {
			extra = append(extra, randomKey(rng))
		}
		after := Build(budget, extra)
		checkTable(t, after, extra, "gate")
		for _, k := range base {
			w0, _ := before.Wire(k)
			w1, _ := after.Wire(k)
			if w0 != w1 {
				t.Fatalf("round %d: %#v renamed %q -> %q after adding unrelated keys %v", round, k, w0, w1, extra[len(base):])
			}
		}
	}
}

// randomKey draws keys from a small alphabet so that they often collide
// after sanitising, but never with the base catalog of the stability test.
func randomKey(rng *rand.Rand) Key {
	servers := []string{"github", "fs", "new", "n-2", "Bad", "x.y"}
	parts := []string{"a", "b", ".", "_", "é", " ", "-", "new", strings.Repeat("w", 30)}
	var b strings.Builder
	b.WriteString("n") // keeps it clear of the base catalog's tools
	for range rng.IntN(6) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return Key{servers[rng.IntN(len(servers))], b.String()}
}

func TestSanitisedNameMovesWhenSpellingIsClaimed(t *testing.T) {
	const budget = 53
	dot := Key{"srv", "a.b"}
	w0, _ := Build(budget, []Key{dot}).Wire(dot)
	if w0 != "srv__a_b" {
		t.Fatalf("alone: %q, want srv__a_b", w0)
	}
	colon := Key{"srv", "a:b"}
	tab := Build(budget, []Key{dot, colon})
	for _, k := range []Key{dot, colon} {
		w, _ := tab.Wire(k)
		if w == "srv__a_b" {
			t.Errorf("%#v inherited the shared spelling %q", k, w)
		}
		if w != wantHashed(t, k, HashLen, budget) {
			t.Errorf("%#v = %q, want its hashed form", k, w)
		}
	}
	if _, ok := tab.Lookup("srv__a_b"); ok {
		t.Error("the contested spelling still resolves to someone")
	}
}

func TestWireAndLookupDoNotAllocate(t *testing.T) {
	keys := benchKeys(1000)
	tab := Build(53, keys)
	wires := make([]string, len(keys))
	for i, k := range keys {
		wires[i], _ = tab.Wire(k)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		k := keys[i%len(keys)]
		i++
		if _, ok := tab.Wire(k); !ok {
			t.Fatal("missing key")
		}
	}); n != 0 {
		t.Errorf("Wire allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		w := wires[i%len(wires)]
		i++
		if _, ok := tab.Lookup(w); !ok {
			t.Fatal("missing name")
		}
	}); n != 0 {
		t.Errorf("Lookup allocates %v times per call, want 0", n)
	}
}
