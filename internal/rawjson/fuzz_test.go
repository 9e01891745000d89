package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{}`,
	`{ }`,
	`{"a":1}`,
	`{"a":1,"a":2}`,
	`{"n\u0061me":"x","name":"y"}`,
	`{"s":"a\\\"b","t":{"u":[1,{"v":null}]}}`,
	"{ \"a\" :\t[ 1 , 2 ] ,\n\"b\" : \"}\" }",
	`{"a":"\u00e9\ud83d\ude00","b":-0.5e-3,"c":true}`,
	`[{"a":1},{"a":1}]`,
	`{"a":{"b":1,"b":2}}`,
	`{"a":1,}`,
	`{"a"`,
	`"str"`,
	`1`,
}

// FuzzMembers checks that Members never panics and that, on valid JSON
// objects, it reports exactly the members encoding/json sees, with spans that
// point at the value bytes.
func FuzzMembers(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var keys []string
		err := Members(obj, func(m Member) bool {
			if m.Start < 0 || m.End > len(obj) || m.Start > m.End || !bytes.Equal(obj[m.Start:m.End], m.Value) {
				t.Fatalf("member %q: bad span [%d:%d] for value %q", m.Key, m.Start, m.End, m.Value)
			}
			keys = append(keys, m.Key)
			return true
		})
		if !isObject(obj) {
			return
		}
		if err != nil {
			t.Fatalf("Members(%q) on a valid object: %v", obj, err)
		}
		want, err := referenceKeys(obj)
		if err != nil {
			t.Fatalf("reference decoder: %v", err)
		}
		if strings.Join(keys, "\x00") != strings.Join(want, "\x00") || len(keys) != len(want) {
			t.Fatalf("Members(%q) keys = %q, encoding/json sees %q", obj, keys, want)
		}
	})
}

// FuzzSet checks that Set never panics and, on valid JSON objects, produces
// valid JSON in which Get finds the new value and every other member keeps
// its raw bytes.
func FuzzSet(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), "a", []byte(`"v"`))
		f.Add([]byte(s), "name", []byte(`{"x":[1,2]}`))
	}
	f.Add([]byte(`{}`), "a\"b\\\x01\u2028", []byte(`null`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, value []byte) {
		out, err := Set(obj, key, value)
		if !isObject(obj) || !json.Valid(value) || !utf8.ValidString(key) {
			return
		}
		if err != nil {
			t.Fatalf("Set(%q, %q, %q) on a valid object: %v", obj, key, value, err)
		}
		if !json.Valid(out) {
			t.Fatalf("Set(%q, %q, %q) = %q: not valid JSON", obj, key, value, out)
		}
		got, ok := Get(out, key)
		// Get reports the value without the whitespace around it.
		if !ok || !bytes.Equal(got, bytes.Trim(value, " \t\r\n")) {
			t.Fatalf("Get(Set(%q, %q, %q), key) = %q, %v; want the value", obj, key, value, got, ok)
		}
		// Every member other than key keeps its raw bytes, in order.
		before := otherMembers(t, obj, key)
		after := otherMembers(t, out, key)
		if len(before) != len(after) {
			t.Fatalf("Set(%q, %q) changed the other members: %q -> %q", obj, key, before, after)
		}
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("Set(%q, %q) changed member %d: %q -> %q", obj, key, i, before[i], after[i])
			}
		}
	})
}

// FuzzUniqueKeys checks UniqueKeys against a reference that walks
// encoding/json's tokens.
func FuzzUniqueKeys(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"\ud800":1,"\ufffd":2}`))
	f.Add([]byte("{\"\xff\":1,\"\xfe\":2}"))
	f.Fuzz(func(t *testing.T, v []byte) {
		got := UniqueKeys(v)
		if !json.Valid(v) {
			return
		}
		if got != nil && strings.Contains(got.Error(), "too deep") {
			return // a deliberate limit encoding/json does not share
		}
		want := referenceUnique(v)
		if (got == nil) != (want == nil) {
			t.Fatalf("UniqueKeys(%q) = %v; the encoding/json reference says %v", v, got, want)
		}
	})
}

func isObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// referenceKeys lists the top-level keys of a valid object with encoding/json.
func referenceKeys(obj []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// referenceUnique reports a duplicate key anywhere in v, using only
// encoding/json's tokenizer.
func referenceUnique(v []byte) error {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber() // 1E700 is valid JSON, only not a float64
	type frame struct {
		object  bool
		seen    []string
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			for _, prev := range top.seen {
				// The reference for "the same key, or keys that differ
				// only in case": the standard library's own comparison.
				if strings.EqualFold(prev, k) {
					return errors.New("duplicate key " + k)
				}
			}
			top.seen = append(top.seen, k)
			top.wantKey = false
			continue
		}
		if top != nil && top.object {
			top.wantKey = true // this token is (the start of) a value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// otherMembers returns the raw "key:value" text of every member not named
// key (keys compared decoded).
func otherMembers(t *testing.T, obj []byte, key string) []string {
	t.Helper()
	var out []string
	err := Members(obj, func(m Member) bool {
		if m.Key != key {
			out = append(out, m.Key+"\x00"+string(m.Value))
		}
		return true
	})
	if err != nil {
		t.Fatalf("Members(%q): %v", obj, err)
	}
	return out
}
