// Package catalogcache keeps each upstream server's last catalog on disk,
// per user, so that a host session can list every tool while no upstream
// runs: the gate starts a server only when a call needs it (DESIGN.md §7).
//
// An entry holds what the server declared and listed: its negotiated
// protocol version, capabilities and instructions, and its tools, prompts,
// resources and resource templates as the gate listed them. Entries live
// under $XDG_CACHE_HOME/mcp-gate/catalog (os.UserCacheDir), one file per
// key, in a 0700 directory, 0600 files written whole by rename. The key is
// a digest of the server's configuration entry (every field that can
// change what it lists: command, args, env names and values, cwd, url,
// headers...) and of the capabilities the gate declares to it, so a change
// to the entry invalidates its entry and nothing holds a secret in clear.
//
// A cache file is a hint, never trusted: it is decoded strictly (unknown
// members, wrong types, a wrong key, trailing data, an oversized file are
// each a reason to ignore it, with a warning), and what it holds passes the
// same neutraliser and checks as a live listing before a host sees it. A
// server started later is listed live and compared with it.
package catalogcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"

	"github.com/mcp-gate/mcp-gate/internal/statefile"
)

// Limits of what is read.
const (
	// MaxFileBytes bounds one entry file: larger ones are ignored.
	MaxFileBytes = 32 << 20
	// MaxItems bounds each list of an entry.
	MaxItems = 20000
	// MaxInstructionsBytes bounds the instructions kept.
	MaxInstructionsBytes = 64 << 10
)

// Entry is one server's cached catalog. A nil list was not known when the
// entry was written (the gate had not listed it): the gate lists it live.
type Entry struct {
	Version         int             `json:"version"`
	Key             string          `json:"key"`
	Server          string          `json:"server"`
	Written         time.Time       `json:"written"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	Instructions    string          `json:"instructions,omitempty"`

	Tools             []json.RawMessage `json:"tools"`
	Prompts           []json.RawMessage `json:"prompts"`
	Resources         []json.RawMessage `json:"resources"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
}

// Config is what of a server's entry its cache key covers. Env and
// Headers values are hashed with the rest, never stored.
type Config struct {
	Name, Type, Command string
	Args                []string
	Env                 map[string]string
	InheritEnv          []string
	InheritAll          bool
	Cwd, URL            string
	Headers             map[string]string
	// Scope names whose children the entry lists: "" for the user running
	// the gate, else a team user's identity (the HTTP front end's token
	// identities), so that what one user's child listed never seeds
	// another user's session.
	Scope string
}

// Key is the cache key of a server: the hex SHA-256 of its configuration
// entry and of the capabilities the gate declares to it (compacted JSON),
// each field length-prefixed so no two entries share a key.
func Key(c Config, clientCaps json.RawMessage) string {
	h := sha256.New()
	put := func(s string) {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	putMap := func(m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		put(fmt.Sprint(len(keys)))
		for _, k := range keys {
			put(k)
			put(m[k])
		}
	}
	put("mcp-gate catalog cache v1")
	put(c.Name)
	put(c.Type)
	put(c.Command)
	put(fmt.Sprint(len(c.Args)))
	for _, a := range c.Args {
		put(a)
	}
	putMap(c.Env)
	put(fmt.Sprint(len(c.InheritEnv)))
	for _, a := range c.InheritEnv {
		put(a)
	}
	put(fmt.Sprint(c.InheritAll))
	put(c.Cwd)
	put(c.URL)
	putMap(c.Headers)
	var compact bytes.Buffer
	if json.Compact(&compact, clientCaps) != nil {
		compact.Reset()
		compact.Write(clientCaps)
	}
	put(compact.String())
	if c.Scope != "" { // absent: the keys of the gate's own user are as before
		put("scope")
		put(c.Scope)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Store is one user's catalog cache.
type Store struct{ dir string }

// DefaultDir is $XDG_CACHE_HOME/mcp-gate/catalog, or the OS's user cache
// directory's (os.UserCacheDir).
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcp-gate", "catalog"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory: %w", err)
	}
	return filepath.Join(d, "mcp-gate", "catalog"), nil
}

// Open returns the store in dir; nothing is created until an entry is
// written.
func Open(dir string) *Store { return &Store{dir: dir} }

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

// validKey reports whether key is 64 lower-case hex digits (a SHA-256),
// the only shape a key has. Checked by hand: the regular expression
// ^[0-9a-f]{64}$ took some 30 µs of every start to compile.
func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Store) path(key string) string { return filepath.Join(s.dir, key+".json") }

// ErrNotCached is Load's error for a key with no entry.
var ErrNotCached = errors.New("no cached catalog")

// Load reads the entry of key for server. No entry is ErrNotCached; any
// other error means the file is unusable (and should be reported, then
// ignored).
func (s *Store) Load(key, server string) (*Entry, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("catalog cache: bad key %q", key)
	}
	data, err := statefile.Read(s.path(key), MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotCached
	}
	if err != nil {
		return nil, fmt.Errorf("catalog cache of %q: %w", server, err)
	}
	e, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("catalog cache of %q (%s): %w", server, s.path(key), err)
	}
	if e.Key != key || e.Server != server {
		return nil, fmt.Errorf("catalog cache of %q (%s): the file is for another server or entry", server, s.path(key))
	}
	return e, nil
}

// Decode reads an entry strictly: unknown members, wrong types, a wrong
// version, data after the object, a list item that is not an object, a
// list or instructions over their bounds are errors.
func Decode(data []byte) (*Entry, error) {
	var e Entry
	if err := rawjson.DecodeStrict(data, &e); err != nil {
		return nil, fmt.Errorf("not a catalog cache entry: %w", err)
	}
	if e.Version != 1 {
		return nil, fmt.Errorf("catalog cache entry version %d; expected 1", e.Version)
	}
	if len(e.Instructions) > MaxInstructionsBytes {
		return nil, fmt.Errorf("instructions of %d bytes; at most %d are kept", len(e.Instructions), MaxInstructionsBytes)
	}
	if len(e.Capabilities) > 0 && e.Capabilities[0] != '{' {
		return nil, errors.New("capabilities is not an object")
	}
	for _, l := range []struct {
		name  string
		items []json.RawMessage
	}{{"tools", e.Tools}, {"prompts", e.Prompts}, {"resources", e.Resources}, {"resourceTemplates", e.ResourceTemplates}} {
		if len(l.items) > MaxItems {
			return nil, fmt.Errorf("%s has %d items; at most %d are read", l.name, len(l.items), MaxItems)
		}
		for i, it := range l.items {
			if len(it) == 0 || it[0] != '{' {
				return nil, fmt.Errorf("%s[%d] is not an object", l.name, i)
			}
		}
	}
	return &e, nil
}

// Save writes e as the entry of its key, atomically.
func (s *Store) Save(e *Entry) error {
	if !validKey(e.Key) {
		return fmt.Errorf("catalog cache: bad key %q", e.Key)
	}
	e.Version = 1
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("catalog cache of %q: %w", e.Server, err)
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("catalog cache of %q: %d bytes, over the %d the gate reads back; not written", e.Server, len(data), MaxFileBytes)
	}
	return statefile.WriteAtomic(s.path(e.Key), append(data, '\n'))
}
