package rawjson

import (
	"errors"
	"slices"
	"testing"
)

// UniqueKeysExact compares keys as written in the objects exact accepts,
// folded everywhere else, and still checks the whole input past a case
// clash it accepts.
func TestUniqueKeysExact(t *testing.T) {
	env := func(p []string) bool { return len(p) == 3 && p[0] == "s" && p[2] == "env" }
	for _, c := range []struct {
		in        string
		first     string // "" for no error
		key, path string
	}{
		{`{"s":{"a":{"env":{"HTTP_PROXY":"1","http_proxy":"2"}}}}`, "", "", ""},
		{`{"s":{"a":{"env":{"HTTP_PROXY":"1","HTTP_PROXY":"2"}}}}`, "HTTP_PROXY", "HTTP_PROXY", "/s/a/env"},
		{`{"s":{"a":{"Env":{},"env":{}}}}`, "Env", "env", "/s/a"},
		{`{"s":{"a":{"env":{"X":"1","x":"2"}},"b":{"args":[{"k":1,"K":2}]}}}`, "k", "K", "/s/b/args/0"},
		{`{"t":{"a":{"env":{"X":"1","x":"2"}}}}`, "X", "x", "/t/a/env"},
	} {
		err := UniqueKeysExact([]byte(c.in), env)
		var ke *KeyError
		switch {
		case c.first == "" && err != nil:
			t.Errorf("%s: %v; want none", c.in, err)
		case c.first != "" && (!errors.As(err, &ke) || ke.First != c.first || ke.Key != c.key || ke.Pointer() != c.path):
			t.Errorf("%s: %v; want %q then %q at %s", c.in, err, c.first, c.key, c.path)
		}
		if ke != nil && slices.Contains(ke.Path, "") {
			t.Errorf("%s: path %q", c.in, ke.Path)
		}
	}
}

func BenchmarkUniqueKeys(b *testing.B) {
	v := []byte(`{"name":"write_file","arguments":{"path":"/work/a/b.txt","content":"hello","mode":"overwrite"},"_meta":{"progressToken":7}}`)
	for b.Loop() {
		if err := UniqueKeys(v); err != nil {
			b.Fatal(err)
		}
	}
}
