package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	type kv struct{ Key, Value string }
	tests := []struct {
		name string
		in   string
		want []kv
	}{
		{"empty", `{}`, nil},
		{"empty with space", " { \n\t} ", nil},
		{"one", `{"a":1}`, []kv{{"a", "1"}}},
		{"spaced", "{ \"a\" :\t1 ,\n\"b\": [1, {\"c\":2}] }", []kv{{"a", "1"}, {"b", `[1, {"c":2}]`}}},
		{"escaped key", `{"n\u0061me":"x"}`, []kv{{"name", `"x"`}}},
		{"escaped quote in key", `{"a\"b":1}`, []kv{{`a"b`, "1"}}},
		{"backslash then quote in value", `{"s":"a\\\"b","t":2}`, []kv{{"s", `"a\\\"b"`}, {"t", "2"}}},
		{"trailing backslashes in value", `{"s":"a\\\\","t":"}"}`, []kv{{"s", `"a\\\\"`}, {"t", `"}"`}}},
		{"braces in strings", `{"s":"{[}]","o":{"x":"}"}}`, []kv{{"s", `"{[}]"`}, {"o", `{"x":"}"}`}}},
		{"duplicates in order", `{"a":1,"a":2}`, []kv{{"a", "1"}, {"a", "2"}}},
		{"scalars", `{"t":true,"f":false,"n":null,"x":-1.5e+3}`, []kv{{"t", "true"}, {"f", "false"}, {"n", "null"}, {"x", "-1.5e+3"}}},
		{"unicode key", `{"é":"ü"}`, []kv{{"é", `"ü"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []kv
			err := Members([]byte(tt.in), func(m Member) bool {
				if string(m.Value) != tt.in[m.Start:m.End] {
					t.Errorf("member %q: Value %q is not obj[%d:%d] = %q", m.Key, m.Value, m.Start, m.End, tt.in[m.Start:m.End])
				}
				got = append(got, kv{m.Key, string(m.Value)})
				return true
			})
			if err != nil {
				t.Fatalf("Members(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Members(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMembersStopsEarly(t *testing.T) {
	n := 0
	// The second member is broken: stopping after the first must not look at it.
	err := Members([]byte(`{"a":1,"b":`), func(Member) bool { n++; return false })
	if err != nil || n != 1 {
		t.Errorf("Members stopped after %d members with error %v; want 1 member and no error", n, err)
	}
}

// invalidObjects are inputs that are not JSON objects, or are broken ones.
// Every function must reject them (or report absence) without panicking.
var invalidObjects = []string{
	``,
	` `,
	`[]`,
	`"s"`,
	`1`,
	`null`,
	`{`,
	`{"`,
	`{"a`,
	`{"a"`,
	`{"a":`,
	`{"a" 1}`,
	`{"a":1`,
	`{"a":1,`,
	`{"a":1,}`,
	`{"a":1 "b":2}`,
	`{a:1}`,
	`{"a":}`,
	`{"a":"unterminated}`,
	`{"a":[1,2}`,
	`{"a":{"b":1}`,
	`{"\u00zz":1}`,
	`{"a\":1}`,
	`{,}`,
	`{"a":1;"b":2}`,
}

func TestMembersInvalid(t *testing.T) {
	for _, in := range invalidObjects {
		err := Members([]byte(in), func(Member) bool { return true })
		if err == nil {
			t.Errorf("Members(%q) = nil error, want an error", in)
		}
	}
	if err := Members([]byte(`[1]`), func(Member) bool { return true }); !errors.Is(err, ErrNotObject) {
		t.Errorf("Members([1]) = %v, want ErrNotObject", err)
	}
}

func TestGet(t *testing.T) {
	tests := []struct {
		obj, key, want string
		ok             bool
	}{
		{`{"a":1,"b":"x"}`, "b", `"x"`, true},
		{`{"a":1}`, "b", "", false},
		{`{"n\u0061me":"v"}`, "name", `"v"`, true},
		{`{"n\u0061me":"v"}`, `n\u0061me`, "", false},
		{`{"a":1,"a":2}`, "a", "2", true}, // the last wins, as in encoding/json
		{`{"a":{"a":3}}`, "a", `{"a":3}`, true},
		{`{ "a" : [ 1 , 2 ] }`, "a", `[ 1 , 2 ]`, true},
		{`{"a":null}`, "a", "null", true},
	}
	for _, tt := range tests {
		got, ok := Get([]byte(tt.obj), tt.key)
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("Get(%s, %q) = %q, %v; want %q, %v", tt.obj, tt.key, got, ok, tt.want, tt.ok)
		}
	}
	for _, in := range invalidObjects {
		if v, ok := Get([]byte(in), "b"); ok {
			t.Errorf("Get(%q, b) = %q, true; want absent", in, v)
		}
	}
}

func TestGetString(t *testing.T) {
	tests := []struct {
		obj, key, want string
		ok             bool
	}{
		{`{"a":"x"}`, "a", "x", true},
		{`{"a":"a\\\"b"}`, "a", `a\"b`, true},
		{`{"a":"\u00e9\n"}`, "a", "é\n", true},
		{`{"a":""}`, "a", "", true},
		{`{"a":1}`, "a", "", false},
		{`{"a":null}`, "a", "", false},
		{`{"a":["x"]}`, "a", "", false},
		{`{"b":"x"}`, "a", "", false},
		{`{"a":"x","a":"y"}`, "a", "y", true},
	}
	for _, tt := range tests {
		got, ok := GetString([]byte(tt.obj), tt.key)
		if ok != tt.ok || got != tt.want {
			t.Errorf("GetString(%s, %q) = %q, %v; want %q, %v", tt.obj, tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name, obj, key, value, want string
	}{
		{"replace", `{"a":1,"b":2}`, "a", `"x"`, `{"a":"x","b":2}`},
		{"replace keeps spacing", "{ \"a\" : 1 ,\n \"b\":\t2 }", "b", `[3]`, "{ \"a\" : 1 ,\n \"b\":\t[3] }"},
		{"replace escaped key", `{"n\u0061me":"old","x":1}`, "name", `"new"`, `{"n\u0061me":"new","x":1}`},
		{"replace every duplicate", `{"a":1,"b":0,"a":2}`, "a", `9`, `{"a":9,"b":0,"a":9}`},
		{"replace object value", `{"a":{"b":"}"},"c":1}`, "a", `null`, `{"a":null,"c":1}`},
		{"replace after tricky string", `{"s":"a\\\"b","a":1}`, "a", `2`, `{"s":"a\\\"b","a":2}`},
		{"append to empty", `{}`, "a", `1`, `{"a":1}`},
		{"append to empty with space", `{ }`, "a", `1`, `{ "a":1}`},
		{"append", `{"b":2}`, "a", `1`, `{"b":2,"a":1}`},
		{"append keeps trailing space", "{\"b\":2 }\n", "a", `1`, "{\"b\":2 ,\"a\":1}\n"},
		{"append key needing escapes", `{}`, "a\"b\\c\n\x01", `1`, `{"a\"b\\c\n\u0001":1}`},
		{"append non-ASCII key", `{}`, "é<&>", `1`, `{"é<&>":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.obj)
			orig := bytes.Clone(in)
			got, err := Set(in, tt.key, []byte(tt.value))
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Set(%s, %q, %s) =\n  %s\nwant\n  %s", tt.obj, tt.key, tt.value, got, tt.want)
			}
			if !bytes.Equal(in, orig) {
				t.Errorf("Set modified its input: %s", in)
			}
			if !json.Valid(got) {
				t.Errorf("Set's output is not valid JSON: %s", got)
			}
			if v, ok := Get(got, tt.key); !ok || string(v) != tt.value {
				t.Errorf("Get(Set(...), %q) = %s, %v; want %s", tt.key, v, ok, tt.value)
			}
		})
	}
}

func TestSetInvalid(t *testing.T) {
	for _, in := range invalidObjects {
		if out, err := Set([]byte(in), "b", []byte("1")); err == nil {
			t.Errorf("Set(%q) = %q, nil; want an error", in, out)
		}
	}
}

func TestSetPath(t *testing.T) {
	tests := []struct {
		name, obj string
		path      []string
		value     string
		want      string
	}{
		{"one level", `{"a":1}`, []string{"a"}, `2`, `{"a":2}`},
		{"create nested", `{}`, []string{"a", "b", "c"}, `1`, `{"a":{"b":{"c":1}}}`},
		{"into existing", `{"p":{"x":1, "t":"old"}}`, []string{"p", "t"}, `"new"`, `{"p":{"x":1, "t":"new"}}`},
		{"append inside existing", `{"p":{"x":1}}`, []string{"p", "y"}, `2`, `{"p":{"x":1,"y":2}}`},
		{"replace non-object", `{"p":5,"q":0}`, []string{"p", "y"}, `2`, `{"p":{"y":2},"q":0}`},
		{"escaped intermediate", `{"_m\u0065ta":{"a":1}}`, []string{"_meta", "b"}, `2`, `{"_m\u0065ta":{"a":1,"b":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetPath([]byte(tt.obj), tt.path, []byte(tt.value))
			if err != nil {
				t.Fatalf("SetPath: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("SetPath(%s, %q, %s) = %s, want %s", tt.obj, tt.path, tt.value, got, tt.want)
			}
		})
	}
	if _, err := SetPath([]byte(`{}`), nil, []byte("1")); err == nil {
		t.Error("SetPath with an empty path: no error")
	}
	for _, in := range invalidObjects {
		if out, err := SetPath([]byte(in), []string{"a", "b"}, []byte("1")); err == nil {
			t.Errorf("SetPath(%q) = %q, nil; want an error", in, out)
		}
	}
}

func TestUniqueKeys(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string // "" for no error
	}{
		{`{}`, ""},
		{`{"a":1,"b":2}`, ""},
		{`[{"a":1},{"a":2}]`, ""},
		{`{"a":{"a":{"a":1}}}`, ""},
		{`"s"`, ""},
		{`12`, ""},
		{` [ ] `, ""},
		{`{"a":1,"a":2}`, `duplicate key "a"`},
		{`{"name":1,"n\u0061me":2}`, `duplicate key "name"`},
		{`{"x":[1,{"k":1,"k":1}]}`, `duplicate key "k"`},
		{`{"a\\":1,"a\\":2}`, `duplicate key "a\\"`},
		{`{"a":1,`, "rawjson"},
		{`{"a" 1}`, "expected ':'"},
		{`[1,2`, "unterminated array"},
		{`[1 2]`, "unexpected"},
		{``, "unexpected end"},
		{strings.Repeat("[", 1002) + strings.Repeat("]", 1002), "too deep"},
	}
	for _, tt := range tests {
		err := UniqueKeys([]byte(tt.in))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("UniqueKeys(%.40s) = %v, want nil", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("UniqueKeys(%.40s) = %v, want an error containing %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"<&>", `"<&>"`},
		{"tab\tnl\n\x00", `"tab\tnl\n\u0000"`},
		{"é", `"é"`},
		{"\u2028", `"\u2028"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
	}
	for _, tt := range tests {
		got := AppendString([]byte("prefix:"), tt.in)
		if string(got) != "prefix:"+tt.want {
			t.Errorf("AppendString(%q) = %s, want prefix:%s", tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal(got[len("prefix:"):], &back); err != nil {
			t.Errorf("AppendString(%q) is not a JSON string: %v", tt.in, err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	obj := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"github__create_issue","arguments":{"title":"x","body":"` + strings.Repeat("y", 1000) + `"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Get(obj, "params"); !ok {
			b.Fatal("params not found")
		}
	}
}

func BenchmarkSet(b *testing.B) {
	obj := []byte(`{"name":"create_issue","description":"` + strings.Repeat("d", 1000) + `","inputSchema":{"type":"object"}}`)
	val := []byte(`"github__create_issue"`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Set(obj, "name", val); err != nil {
			b.Fatal(err)
		}
	}
}

// A duplicate is reported with the keys and the object's position, never a
// value, so that the error can go back to the host and into logs.
func TestUniqueKeysPosition(t *testing.T) {
	tests := []struct {
		in, key, first, pointer string
	}{
		{`{"a":1,"a":2}`, "a", "a", ""},
		{`{"arguments":{"path":"/x","PATH":"/etc/secret"}}`, "PATH", "path", "/arguments"},
		{`{"ref":{"type":"ref/resource","uri":"a","URI":"b"}}`, "URI", "uri", "/ref"},
		{`{"x":[1,{"y":[{},{"k":"v1","k":"v2"}]}]}`, "k", "k", "/x/1/y/1"},
		{`{"a/b~":{"c":1,"c":2}}`, "c", "c", "/a~1b~0"},
		{`{"line\nbreak":{"c":1,"C":2}}`, "C", "c", `/line\nbreak`},
	}
	for _, tt := range tests {
		err := UniqueKeys([]byte(tt.in))
		var ke *KeyError
		if !errors.As(err, &ke) {
			t.Fatalf("UniqueKeys(%s) = %v, want a *KeyError", tt.in, err)
		}
		if ke.Key != tt.key || ke.First != tt.first || ke.Pointer() != tt.pointer {
			t.Errorf("UniqueKeys(%s): key %q first %q at %q; want %q %q at %q", tt.in, ke.Key, ke.First, ke.Pointer(), tt.key, tt.first, tt.pointer)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "v2") || strings.Contains(err.Error(), "\n") {
			t.Errorf("the error shows a value or a raw line break: %v", err)
		}
		if tt.in[ke.Offset] != '"' {
			t.Errorf("offset %d does not point at a key in %s", ke.Offset, tt.in)
		}
	}
	long := `{"` + strings.Repeat("k", 5000) + `":{"a":1,"a":2}}`
	if err := UniqueKeys([]byte(long)); err == nil || len(err.Error()) > 400 {
		t.Errorf("a long key makes a long error (%d bytes)", len(err.Error()))
	}
}

// DecodeStrict refuses every reading on which two decoders could differ:
// a key twice or in two cases, a member the type does not name, and data
// after the value.
func TestDecodeStrict(t *testing.T) {
	type doc struct {
		Op string `json:"op"`
		ID string `json:"id"`
	}
	var d doc
	if err := DecodeStrict([]byte(`{"op":"deny","id":"x"} `), &d); err != nil || d.Op != "deny" || d.ID != "x" {
		t.Fatalf("a plain object: %v, %+v", err, d)
	}
	for _, in := range []string{
		`{"op":"deny","op":"approve"}`,
		`{"op":"deny","OP":"approve"}`,
		`{"op":"deny","other":1}`,
		`{"op":"deny"} {"op":"approve"}`,
		`{"op":"deny"`,
	} {
		var d doc
		if err := DecodeStrict([]byte(in), &d); err == nil {
			t.Errorf("DecodeStrict(%s) = nil, decoded %+v; want an error", in, d)
		}
	}
}
