// Package pins holds the gate to what was approved: the digest of every
// tool, prompt and resource template definition an upstream listed, taken
// when the gate first saw it, kept per user and per server on disk.
//
// Pins are state, not cache: they live under $XDG_STATE_HOME/mcp-gate/pins
// (~/.local/state/mcp-gate/pins), one file per server key, and outlive any
// change of the server's entry or of the catalog cache. A definition whose
// digest differs from its pin is a change: the proxy does not let a call
// to it through silently (the policy's pins setting says ask, deny or
// allow), and the change is recorded as pending, with the new definition,
// so that `mcp-gate pins` can show it and `mcp-gate pins accept` take it.
//
// The digest is over the canonical JSON of the definition as the gate
// lists it (keys sorted, numbers as written, no insignificant space):
// description, title, schemas, annotations, _meta, everything. A tool
// swapped for another of the same name, a new required argument, a
// readOnlyHint turned into destructiveHint, a description that grew
// instructions: each changes the digest.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"

	"github.com/mcp-gate/mcp-gate/internal/statefile"
)

// Limits of what the store reads and keeps.
const (
	// MaxFileBytes bounds one server's pins file; a larger one is not read
	// (and not trusted: see Store.Load).
	MaxFileBytes = 16 << 20
	// MaxDefinitionBytes bounds a definition kept beside its digest for
	// showing a diff; a larger one keeps only its digest.
	MaxDefinitionBytes = 64 << 10
)

// Item is one pinned (or pending) definition.
type Item struct {
	Digest string `json:"digest"`
	// Definition is the canonical JSON the digest is over, kept so a
	// change can be shown as a diff; absent when over MaxDefinitionBytes.
	Definition json.RawMessage `json:"definition,omitempty"`
	Since      time.Time       `json:"since"`
}

// File is one server's pins.
type File struct {
	Version int    `json:"version"`
	Server  string `json:"server"`
	// Pinned is what was approved, by key (Key).
	Pinned map[string]Item `json:"pinned"`
	// Pending is what the server lists now where it differs from the pin.
	Pending map[string]Item `json:"pending,omitempty"`
}

// Kinds of definitions, the first part of a key.
const (
	KindTool     = "tool"
	KindPrompt   = "prompt"
	KindTemplate = "template"
)

// Key names one definition of a server: "tool:NAME", "prompt:NAME" or
// "template:URITEMPLATE".
func Key(kind, name string) string { return kind + ":" + name }

// Canonical returns the canonical JSON of a definition: object keys sorted,
// numbers as written, strings re-escaped the one way Go writes them, no
// insignificant space. Two listings of the same definition, whatever their
// spacing or key order, have the same canonical form.
func Canonical(def json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("definition is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("definition has data after its value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Digest is "sha256:" and the hex SHA-256 of the canonical form of def. A
// definition that is not JSON has a digest of its bytes, so it still pins.
func Digest(def json.RawMessage) string {
	c, err := Canonical(def)
	if err != nil {
		c = def
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Short is a digest cut for display.
func Short(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return digest
}

// State is what the store says of a definition.
type State int

const (
	// New: never pinned (it is pinned now).
	New State = iota
	// Same: the pin matches.
	Same
	// Changed: the pin differs.
	Changed
)

// serverKey is what a server key looks like (upstream.ServerKeyPattern,
// ^[a-z0-9][a-z0-9-]*$): it names a file, so nothing else is accepted.
// Checked byte by byte rather than by a regexp: every call the gate
// relays loads its server's pins.
var serverKey serverKeyShape

type serverKeyShape struct{}

// MatchString reports whether s is a server key.
func (serverKeyShape) MatchString(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Store is the pins of one user. Safe for concurrent use, by goroutines of
// one gate and by several gates of the same user: every change takes a
// lock file and re-reads the file before writing it back whole.
type Store struct {
	dir string

	mu    sync.Mutex
	cache map[string]cached // server → the file as last read
	// gen counts this store's writes (update). A read begun before a
	// write may not put what it read in the cache once the write has
	// dropped it: a load compares gen before and after, so that a
	// concurrent read (the preload at a server's launch, another
	// session's check) cannot bring back the file as it was before this
	// store's own write for the next revalidate. Guarded by mu.
	gen uint64
	// loaded, when set (tests), runs after a load has read the file and
	// before it is cached.
	loaded func(server string)
}

type cached struct {
	f       *File
	modTime time.Time
	size    int64
	checked time.Time // when the file was last seen unchanged
}

// revalidate is how long a read of a pins file answers "the pin matches"
// before the file is looked at again (a stat): what another gate writes
// is seen within it. Anything but a match is always checked against the
// file as it is, so an accept from the command line counts at once, and
// this store's own writes are seen at once.
const revalidate = 500 * time.Millisecond

// DefaultDir is $XDG_STATE_HOME/mcp-gate/pins, or
// ~/.local/state/mcp-gate/pins.
func DefaultDir() (string, error) {
	d, err := statefile.UserDir("XDG_STATE_HOME", filepath.Join(".local", "state"))
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pins"), nil
}

// Open returns the store in dir; nothing is created until a pin is written.
func Open(dir string) *Store { return &Store{dir: dir, cache: map[string]cached{}} }

// Dir is where the store keeps its files.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(server string) string { return filepath.Join(s.dir, server+".json") }

// Load reads a server's pins. A missing file is an empty one. A file that
// cannot be read whole, is too large, or does not decode strictly is an
// error: the caller must not take an unreadable file for "nothing pinned",
// which would pin whatever the server lists now.
func (s *Store) Load(server string) (*File, error) { return s.load(server, false) }

// load is Load; a recent read (within revalidate) serves unless fresh.
func (s *Store) load(server string, fresh bool) (*File, error) {
	if !serverKey.MatchString(server) {
		return nil, fmt.Errorf("pins: %q is not a server key", server)
	}
	s.mu.Lock()
	c, ok := s.cache[server]
	gen := s.gen
	s.mu.Unlock()
	now := time.Now()
	if ok && !fresh && now.Sub(c.checked) < revalidate {
		return c.f, nil
	}
	p := s.path(server)
	// A file missing from a directory others could write (or swap) is not
	// "nothing pinned": statefile.Stat refuses such a directory.
	fi, err := statefile.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyFile(server), nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins of %q: %w", server, err)
	}
	if ok && c.modTime.Equal(fi.ModTime()) && c.size == fi.Size() {
		s.cacheIfUnwritten(server, gen, cached{f: c.f, modTime: c.modTime, size: c.size, checked: now})
		return c.f, nil
	}
	f, err := s.read(server)
	if err != nil {
		return nil, err
	}
	if s.loaded != nil {
		s.loaded(server)
	}
	s.cacheIfUnwritten(server, gen, cached{f: f, modTime: fi.ModTime(), size: fi.Size(), checked: now})
	return f, nil
}

// cacheIfUnwritten caches c unless this store has written a file since
// the load that read c began (gen): what it read may be older than that
// write, and the next load must read the file again.
func (s *Store) cacheIfUnwritten(server string, gen uint64, c cached) {
	s.mu.Lock()
	if s.gen == gen {
		s.cache[server] = c
	}
	s.mu.Unlock()
}

func emptyFile(server string) *File {
	return &File{Version: 1, Server: server, Pinned: map[string]Item{}, Pending: map[string]Item{}}
}

func (s *Store) read(server string) (*File, error) {
	data, err := statefile.Read(s.path(server), MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyFile(server), nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins of %q: %w", server, err)
	}
	f, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("pins of %q (%s): %w", server, s.path(server), err)
	}
	if f.Server != server {
		return nil, fmt.Errorf("pins of %q (%s): the file is for server %q", server, s.path(server), f.Server)
	}
	return f, nil
}

// Decode reads a pins file strictly: unknown members, a wrong version,
// data after the object, or an item without a sha256 digest are errors.
func Decode(data []byte) (*File, error) {
	var f File
	if err := rawjson.DecodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("not a pins file: %w", err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("pins file version %d; expected 1", f.Version)
	}
	if !serverKey.MatchString(f.Server) {
		return nil, errors.New("pins file names no valid server")
	}
	for _, m := range []map[string]Item{f.Pinned, f.Pending} {
		for k, it := range m {
			if !validDigest(it.Digest) {
				return nil, fmt.Errorf("pin %q has the digest %q; expected sha256: and 64 hex digits", k, it.Digest)
			}
		}
	}
	if f.Pinned == nil {
		f.Pinned = map[string]Item{}
	}
	if f.Pending == nil {
		f.Pending = map[string]Item{}
	}
	return &f, nil
}

// validDigest reports whether d is "sha256:" and 64 lower-case hex
// digits. Checked by hand: the regular expression ^sha256:[0-9a-f]{64}$
// took some 20 µs of every start to compile.
func validDigest(d string) bool {
	const prefix = "sha256:"
	if len(d) != len(prefix)+64 || d[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// update changes a server's file under the lock: it re-reads the file,
// lets change edit it, and writes it back whole when change reports a
// change.
func (s *Store) update(server string, change func(f *File) bool) error {
	if !serverKey.MatchString(server) {
		return fmt.Errorf("pins: %q is not a server key", server)
	}
	if err := statefile.MkdirPrivate(s.dir); err != nil {
		return err
	}
	unlock, err := statefile.Lock(filepath.Join(s.dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read(server)
	if err != nil {
		return err
	}
	if !change(f) {
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := statefile.WriteAtomic(s.path(server), append(data, '\n')); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.cache, server) // re-read (and re-stat) on the next Load
	s.gen++                 // and a load begun before this write does not cache what it read
	s.mu.Unlock()
	return nil
}

func item(def json.RawMessage, digest string, now time.Time) Item {
	it := Item{Digest: digest, Since: now.UTC().Truncate(time.Second)}
	if c, err := Canonical(def); err == nil && len(c) <= MaxDefinitionBytes {
		it.Definition = c
	}
	return it
}

// Observe records what a server lists now (key → definition): a definition
// never seen is pinned; one that differs from its pin is recorded as
// pending (the pin stays); one that matches its pin again clears its
// pending change. It returns the keys whose definitions differ from their
// pins.
func (s *Store) Observe(server string, defs map[string]json.RawMessage) ([]string, error) {
	digests := make(map[string]string, len(defs))
	for k, d := range defs {
		digests[k] = Digest(d)
	}
	// Most listings change nothing: decide that from the cached file,
	// without the lock.
	if f, err := s.Load(server); err == nil {
		need := false
		for k, d := range digests {
			p, ok := f.Pinned[k]
			if !ok || (p.Digest != d && f.Pending[k].Digest != d) || (p.Digest == d && f.Pending[k].Digest != "") {
				need = true
				break
			}
		}
		if !need {
			return changedKeys(f, digests), nil
		}
	}
	var changed []string
	now := time.Now()
	err := s.update(server, func(f *File) bool {
		dirty := false
		for k, d := range digests {
			p, ok := f.Pinned[k]
			switch {
			case !ok:
				f.Pinned[k] = item(defs[k], d, now)
				dirty = true
			case p.Digest == d:
				if _, ok := f.Pending[k]; ok {
					delete(f.Pending, k)
					dirty = true
				}
			default:
				if f.Pending[k].Digest != d {
					f.Pending[k] = item(defs[k], d, now)
					dirty = true
				}
			}
		}
		changed = changedKeys(f, digests)
		return dirty
	})
	return changed, err
}

func changedKeys(f *File, digests map[string]string) []string {
	var out []string
	for k, d := range digests {
		if p, ok := f.Pinned[k]; ok && p.Digest != d {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Check says whether def, listed by server under key, matches its pin,
// and returns the pin (for a diff). A definition never pinned is New and
// is not pinned here: the gate pins what it lists (Observe), and a call
// need not wait for a disk.
func (s *Store) Check(server, key string, def json.RawMessage, digest string) (State, Item, error) {
	f, err := s.Load(server)
	if err == nil {
		if p, ok := f.Pinned[key]; ok && p.Digest == digest {
			return Same, p, nil
		}
	}
	f, err = s.load(server, true)
	if err != nil {
		return Changed, Item{}, err
	}
	p, ok := f.Pinned[key]
	switch {
	case !ok:
		return New, Item{}, nil
	case p.Digest == digest:
		return Same, p, nil
	}
	if f.Pending[key].Digest != digest {
		// Seen for the first time at a call: record it, so the CLI shows it.
		_, _ = s.Observe(server, map[string]json.RawMessage{key: def})
	}
	return Changed, p, nil
}

// Accept pins def (its digest) for key, clearing any pending change.
func (s *Store) Accept(server, key string, def json.RawMessage, digest string) error {
	return s.update(server, func(f *File) bool {
		f.Pinned[key] = item(def, digest, time.Now())
		delete(f.Pending, key)
		return true
	})
}

// AcceptPending pins the pending changes of server whose key matches
// (all of them when match is nil) and returns the keys accepted.
func (s *Store) AcceptPending(server string, match func(key string) bool) ([]string, error) {
	var keys []string
	err := s.update(server, func(f *File) bool {
		for k, it := range f.Pending {
			if match == nil || match(k) {
				f.Pinned[k] = it
				delete(f.Pending, k)
				keys = append(keys, k)
			}
		}
		return len(keys) > 0
	})
	sort.Strings(keys)
	return keys, err
}

// Servers lists the servers that have a pins file.
func (s *Store) Servers() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if n := len(name) - len(".json"); n > 0 && name[n:] == ".json" && serverKey.MatchString(name[:n]) {
			out = append(out, name[:n])
		}
	}
	return out, nil
}
