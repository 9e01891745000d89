package catalogcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func entry(key string, n int) *Entry {
	e := &Entry{Key: key, Server: "srv", ProtocolVersion: "2025-11-25", Capabilities: json.RawMessage(`{"tools":{}}`),
		Instructions: "be nice", Tools: []json.RawMessage{}, Prompts: nil}
	for i := range n {
		e.Tools = append(e.Tools, json.RawMessage(fmt.Sprintf(`{"name":"t%d"}`, i)))
	}
	return e
}

func TestKeyCoversTheEntry(t *testing.T) {
	base := Config{Name: "s", Type: "stdio", Command: "node", Args: []string{"a", "b"}, Env: map[string]string{"TOKEN": "x"}, Cwd: "/w"}
	k := Key(base, json.RawMessage(`{}`))
	if !validKey(k) {
		t.Fatalf("key %q", k)
	}
	if Key(base, json.RawMessage(` { } `)) != k {
		t.Error("capabilities spacing changed the key")
	}
	variants := []func(c *Config){
		func(c *Config) { c.Command = "node2" },
		func(c *Config) { c.Args = []string{"a b"} },
		func(c *Config) { c.Args = []string{"a", "b", ""} },
		func(c *Config) { c.Env = map[string]string{"TOKEN": "y"} },
		func(c *Config) { c.Env = map[string]string{"TOKEN": "x", "B": ""} },
		func(c *Config) { c.Cwd = "/v" },
		func(c *Config) { c.Name = "t" },
		func(c *Config) { c.InheritAll = true },
		func(c *Config) { c.URL = "http://127.0.0.1" },
		func(c *Config) { c.Headers = map[string]string{"A": "b"} },
		func(c *Config) { c.Scope = "alice" },
	}
	for i, v := range variants {
		c := base
		v(&c)
		if Key(c, json.RawMessage(`{}`)) == k {
			t.Errorf("variant %d has the same key", i)
		}
	}
	if Key(base, json.RawMessage(`{"elicitation":{}}`)) == k {
		t.Error("capabilities are not in the key")
	}
	// Each team user's entries are their own; the gate's own user (no
	// scope) keeps the keys it had before scopes existed (the key of this
	// entry as the cache wrote it then).
	a, b := base, base
	a.Scope, b.Scope = "alice", "bob"
	if Key(a, nil) == Key(b, nil) {
		t.Error("two scopes share a key")
	}
	if got := Key(Config{Name: "srv"}, nil); got != "838551b69d9ece3d5f20cd2a73d220b770c6238e4c732fdd0cb730d8c9846854" {
		t.Errorf("the unscoped key changed: %s", got)
	}
}

func TestSaveLoad(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "catalog"))
	key := Key(Config{Name: "srv"}, nil)
	if _, err := s.Load(key, "srv"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("empty cache: %v", err)
	}
	if err := s.Save(entry(key, 3)); err != nil {
		t.Fatal(err)
	}
	e, err := s.Load(key, "srv")
	if err != nil || len(e.Tools) != 3 || e.Prompts != nil || e.Instructions != "be nice" {
		t.Fatalf("load: %+v %v", e, err)
	}
	if _, err := s.Load(key, "other"); err == nil {
		t.Error("an entry was loaded for another server")
	}
	if fi, _ := os.Stat(filepath.Join(s.Dir(), key+".json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fi.Mode().Perm())
	}
	if di, _ := os.Stat(s.Dir()); di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", di.Mode().Perm())
	}
}

func TestCorruptEntriesRejected(t *testing.T) {
	s := Open(t.TempDir())
	key := Key(Config{Name: "srv"}, nil)
	good := `{"version":1,"key":"` + key + `","server":"srv","written":"2020-01-01T00:00:00Z","tools":[{"name":"a"}],"prompts":null,"resources":null,"resourceTemplates":null}`
	if _, err := Decode([]byte(good)); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for name, content := range map[string]string{
		"truncated":         good[:len(good)/2],
		"unknown member":    strings.Replace(good, `"version":1,`, `"version":1,"trusted":true,`, 1),
		"item not object":   strings.Replace(good, `[{"name":"a"}]`, `["a"]`, 1),
		"tools not list":    strings.Replace(good, `[{"name":"a"}]`, `{"name":"a"}`, 1),
		"version":           strings.Replace(good, `"version":1`, `"version":7`, 1),
		"trailing":          good + `{}`,
		"capabilities":      strings.Replace(good, `"version":1,`, `"version":1,"capabilities":[1],`, 1),
		"wrong key":         strings.Replace(good, key, strings.Repeat("0", 64), 1),
		"oversized":         good + strings.Repeat(" ", MaxFileBytes),
		"long instructions": strings.Replace(good, `"version":1,`, `"version":1,"instructions":"`+strings.Repeat("x", MaxInstructionsBytes+1)+`",`, 1),
	} {
		if err := os.WriteFile(filepath.Join(s.Dir(), key+".json"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(key, "srv"); err == nil || errors.Is(err, ErrNotCached) {
			t.Errorf("%s: loaded (%v)", name, err)
		}
	}
	if _, err := s.Load("../../etc/passwd", "srv"); err == nil {
		t.Error("a key that is a path was accepted")
	}
}

// Two gates of one user writing one entry at once: every read sees a whole
// file, one or the other.
func TestConcurrentWritersAtomic(t *testing.T) {
	dir := t.TempDir()
	key := Key(Config{Name: "srv"}, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		s := Open(dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if err := s.Save(entry(key, 50+w*50)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := Open(dir)
		for {
			select {
			case <-stop:
				return
			default:
			}
			e, err := r.Load(key, "srv")
			if errors.Is(err, ErrNotCached) {
				continue
			}
			if err != nil || len(e.Tools)%50 != 0 {
				t.Errorf("a reader saw a broken entry: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"key":"k","server":"s","tools":[{"name":"a"}],"prompts":[],"resources":null,"resourceTemplates":null}`))
	f.Add([]byte(`{"version":1,"tools":[1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Decode(data)
		if err != nil {
			return
		}
		for _, l := range [][]json.RawMessage{e.Tools, e.Prompts, e.Resources, e.ResourceTemplates} {
			for _, it := range l {
				if len(it) == 0 || it[0] != '{' {
					t.Fatalf("accepted a list item that is not an object: %q", it)
				}
			}
		}
	})
}
