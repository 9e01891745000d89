package rawjson

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// chainedDelete is what DeleteKeys must equal: Delete of each key in turn.
func chainedDelete(obj []byte, keys ...string) ([]byte, bool) {
	any := false
	for _, k := range keys {
		var found bool
		obj, found = Delete(obj, k)
		any = any || found
	}
	return obj, any
}

func TestDeleteKeysIsChainedDelete(t *testing.T) {
	keys := []string{"a", "b", "c"}
	cases := []string{
		`{}`, `{ }`, `[1]`, `"x"`, `{"a":1}`, `{ "a" : 1 }`, `{"a":1,"b":2}`, `{"x":1,"a":2}`,
		`{"a":1,"x":2}`, `{ "a" : 1 , "x" : 2 , "b" : 3 }`, `{"x":1,"a":2,"y":3,"b":4,"c":5}`,
		`{"a":1,"b":2,"c":3}`, `{"a":1,"a":2,"x":{"a":1}}`, `{"\u0061":1,"x":[1,{"b":2}]}`,
		"{\n  \"a\": 1,\n  \"x\": 2,\n  \"b\": 3\n}", `{"x":1,"b":2 }`, `{"x":1,"a":`, `{"a":1,}`,
	}
	// And generated ones: members named from a few keys, spaced at random.
	r := rand.New(rand.NewSource(1))
	names := []string{"a", "b", "c", "x", "y"}
	sp := []string{"", " ", "\n\t"}
	for range 3000 {
		var b strings.Builder
		b.WriteString(sp[r.Intn(3)] + "{" + sp[r.Intn(3)])
		n := r.Intn(6)
		for i := range n {
			if i > 0 {
				b.WriteString(sp[r.Intn(3)] + "," + sp[r.Intn(3)])
			}
			b.WriteString(`"` + names[r.Intn(len(names))] + `"` + sp[r.Intn(3)] + ":" + sp[r.Intn(3)] + `{"a":1}`[:1+r.Intn(1)*6])
			if b.String()[b.Len()-1] == '{' {
				b.WriteString("}")
			}
		}
		b.WriteString(sp[r.Intn(3)] + "}" + sp[r.Intn(3)])
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		for _, ks := range [][]string{keys, {"b"}, {"a", "x"}, {"y", "a"}, nil} {
			want, wantFound := chainedDelete([]byte(c), ks...)
			got, found := DeleteKeys([]byte(c), ks...)
			if string(got) != string(want) || found != wantFound {
				t.Fatalf("DeleteKeys(%q, %q) = %q, %v; Delete in turn gives %q, %v", c, ks, got, found, want, wantFound)
			}
		}
	}
}

func TestDeleteKeysAllocations(t *testing.T) {
	obj := []byte(`{"_meta":{},"requestState":"s","name":"x","inputResponses":{}}`)
	if n := testing.AllocsPerRun(100, func() { DeleteKeys(obj, "_meta", "requestState", "inputResponses") }); n != 1 {
		t.Errorf("DeleteKeys of three members: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { DeleteKeys(obj, "absent") }); n != 0 {
		t.Errorf("DeleteKeys of an absent member: %v allocations, want 0", n)
	}
}

func FuzzDeleteKeys(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{ "x":1 , "a":[1,2],"b":{"a":2}}`, `{}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // callers validate a message once, when it is read
		}
		want, wantFound := chainedDelete(in, "a", "b")
		got, found := DeleteKeys(in, "a", "b")
		if string(got) != string(want) || found != wantFound {
			t.Fatalf("DeleteKeys(%q) = %q, %v; Delete in turn gives %q, %v", in, got, found, want, wantFound)
		}
	})
}
