package rawjson

import (
	"encoding/json"
	"testing"
)

func TestDelete(t *testing.T) {
	for _, c := range []struct{ in, key, want string }{
		{`{"task":{"ttl":1},"name":"x"}`, "task", `{"name":"x"}`},
		{`{"name":"x", "task":{"ttl":1}}`, "task", `{"name":"x"}`},
		{`{"name":"x","task":{},"arguments":{"task":1}}`, "task", `{"name":"x","arguments":{"task":1}}`},
		{`{ "task" : 1 }`, "task", `{ }`},
		{`{"t\u0061sk":1,"a":2}`, "task", `{"a":2}`},
		{`{"task":1,"task":2,"a":3}`, "task", `{"a":3}`},
		{`{"a":1}`, "task", `{"a":1}`},
		{`[1]`, "task", `[1]`},
	} {
		got, _ := Delete([]byte(c.in), c.key)
		if string(got) != c.want {
			t.Errorf("Delete(%s, %q) = %s, want %s", c.in, c.key, got, c.want)
		}
		if c.in[0] == '{' && !json.Valid(got) {
			t.Errorf("Delete(%s) is not JSON: %s", c.in, got)
		}
	}
}

func FuzzDelete(f *testing.F) {
	for _, s := range []string{`{"task":1}`, `{"a":1,"task":[1,2],"b":{"task":2}}`, `{}`, `{"task":1,"task":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		out, found := Delete(in, "task")
		if !json.Valid(out) {
			t.Fatalf("Delete(%s) = %s, not JSON", in, out)
		}
		if _, still := Get(out, "task"); still {
			t.Fatalf("Delete(%s) = %s still has task", in, out)
		}
		if _, had := Get(in, "task"); had != found {
			t.Fatalf("Delete(%s) found=%v, Get says %v", in, found, had)
		}
	})
}
