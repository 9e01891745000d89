package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxTokenFileBytes bounds the token file: a team's tokens fit in far less.
const maxTokenFileBytes = 1 << 20

// minTokenLen is the shortest token written in clear the file accepts: a
// shorter one could be guessed.
const minTokenLen = 16

// digestPrefix marks a key that is the SHA-256 of a token, hex.
const digestPrefix = "sha256:"

// tokenTable maps the SHA-256 of each token to who it speaks for.
type tokenTable map[[sha256.Size]byte]Principal

// TokenFile authenticates the tokens of a YAML file. The file maps each
// token, or "sha256:" and the hex SHA-256 of one, to the principal it
// speaks for:
//
//	"sha256:5e88...": {sub: alice, email: alice@example.com, groups: [dev]}
//	"a-token-of-at-least-16-characters": {sub: ci-bot, groups: [ci]}
//
// The file is read strictly (unknown keys, a missing sub, a token twice are
// errors with their line and column) and followed: a valid new content is
// in force within about a second, an invalid one is logged and changes
// nothing, a deleted file keeps the last good table.
type TokenFile struct {
	path  string
	log   *slog.Logger
	table atomic.Pointer[tokenTable]
	rev   atomic.Pointer[string]
	done  chan struct{}
}

// pollEvery is how often the token file is read. It is small (a read of a
// tiny file), and a read catches every way a file can change (an editor's
// rename, a Kubernetes ..data swap, a bind mount without inotify), which
// is the point: revoking a token must take effect whatever the file
// system.
const pollEvery = 250 * time.Millisecond

// OpenTokenFile loads the file at path and follows it until ctx is done.
// A file that is missing or invalid at the start is an error.
func OpenTokenFile(ctx context.Context, path string, log *slog.Logger) (*TokenFile, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokens(path, data)
	if err != nil {
		return nil, err
	}
	f := &TokenFile{path: path, log: log, done: make(chan struct{})}
	f.swap(t, data)
	if len(t) == 0 {
		log.Warn("the token file has no tokens: every request is refused until one is added", "event", "auth_tokens_load", "tokens_file", path)
	}
	go f.follow(ctx, data)
	return f, nil
}

func (f *TokenFile) swap(t tokenTable, data []byte) {
	sum := sha256.Sum256(data)
	rev := "sha256:" + hex.EncodeToString(sum[:6])
	f.table.Store(&t)
	f.rev.Store(&rev)
}

// Revision names the content in force ("sha256:" and 12 hex digits).
func (f *TokenFile) Revision() string { return *f.rev.Load() }

// Done is closed when the file is no longer followed.
func (f *TokenFile) Done() <-chan struct{} { return f.done }

// follow re-reads the file and applies a new content once two reads a poll
// apart agree (a writer pausing mid-file must not put half a file, perhaps
// without a revocation, in force).
func (f *TokenFile) follow(ctx context.Context, current []byte) {
	defer close(f.done)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var pending []byte
	lastFailure := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		data, err := readBounded(f.path)
		if err != nil {
			if msg := err.Error(); msg != lastFailure {
				lastFailure = msg
				f.log.Error("token file reload", "event", "auth_tokens_reload", "tokens_file", f.path, "ok", false, "revision", f.Revision(), "error", msg+"; keeping the last good tokens")
			}
			pending = nil
			continue
		}
		if bytes.Equal(data, current) {
			pending = nil
			continue
		}
		if !bytes.Equal(data, pending) {
			pending = data
			continue
		}
		pending = nil
		t, err := ParseTokens(f.path, data)
		if err != nil {
			if msg := err.Error(); msg != lastFailure {
				lastFailure = msg
				f.log.Error("token file reload", "event", "auth_tokens_reload", "tokens_file", f.path, "ok", false, "revision", f.Revision(), "error", msg+"\n(keeping the last good tokens)")
			}
			continue
		}
		lastFailure = ""
		old := f.Revision()
		f.swap(t, data)
		current = data
		f.log.Info("token file reload", "event", "auth_tokens_reload", "tokens_file", f.path, "ok", true, "revision", f.Revision(), "old_revision", old, "tokens", len(t))
	}
}

func readBounded(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxTokenFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(data) > maxTokenFileBytes {
		return nil, fmt.Errorf("token file %s: larger than %d bytes; expected a small YAML mapping", path, maxTokenFileBytes)
	}
	return data, nil
}

// Authenticate looks the token up by its digest.
func (f *TokenFile) Authenticate(_ context.Context, token string) (Principal, error) {
	p, ok := (*f.table.Load())[sha256.Sum256([]byte(token))]
	if !ok {
		return Principal{}, fmt.Errorf("%w: the token is not in the gate's token file (unknown or revoked)", ErrInvalidToken)
	}
	return p, nil
}

// AuthorizationServers is empty: a token file's tokens come from no issuer.
func (f *TokenFile) AuthorizationServers() []string { return nil }

// ParseTokens reads a token file's content strictly; name is the file's
// name, for the errors, which give the line and column of each problem and
// never quote a token.
func ParseTokens(name string, data []byte) (tokenTable, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v; expected a YAML mapping of tokens to {sub, email, groups}", name, redactYAMLError(err))
	}
	t := tokenTable{}
	if len(doc.Content) == 0 {
		return t, nil // empty: no tokens
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: the file is a %s; expected a mapping of tokens to {sub, email, groups}", name, root.Line, root.Column, kindName(root.Kind))
	}
	var errs []error
	bad := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	where := map[[sha256.Size]byte]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			bad(k, "a key is a %s; expected a token or sha256:<hex digest> as a string", kindName(k.Kind))
			continue
		}
		var sum [sha256.Size]byte
		switch key := k.Value; {
		case strings.HasPrefix(key, digestPrefix):
			h, err := hex.DecodeString(strings.TrimPrefix(key, digestPrefix))
			if err != nil || len(h) != sha256.Size {
				bad(k, "a sha256: key is not 64 hex digits; expected sha256: and the hex SHA-256 of a token")
				continue
			}
			copy(sum[:], h)
		case len(key) < minTokenLen:
			bad(k, "a token is %d characters long; expected at least %d (or write its sha256: digest)", len(key), minTokenLen)
			continue
		default:
			sum = sha256.Sum256([]byte(key))
		}
		if line, dup := where[sum]; dup {
			bad(k, "this token is listed already on line %d; expected each token once", line)
			continue
		}
		where[sum] = k.Line
		p, ok := parsePrincipal(v, bad)
		if ok {
			t[sum] = p
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

func parsePrincipal(v *yaml.Node, bad func(*yaml.Node, string, ...any)) (Principal, bool) {
	if v.Kind != yaml.MappingNode {
		bad(v, "a token's entry is a %s; expected a mapping with sub, and optionally email and groups", kindName(v.Kind))
		return Principal{}, false
	}
	var p Principal
	ok, seen := true, map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if seen[k.Value] {
			bad(k, "the key %q is given twice; expected it once", k.Value)
			ok = false
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "sub", "email":
			if val.Kind != yaml.ScalarNode || val.Tag != "!!str" {
				bad(val, "%s is a %s; expected a string", k.Value, describe(val))
				ok = false
				continue
			}
			if k.Value == "sub" {
				p.Subject = val.Value
			} else {
				p.Email = val.Value
			}
		case "groups":
			if val.Kind != yaml.SequenceNode {
				bad(val, "groups is a %s; expected a list of strings", describe(val))
				ok = false
				continue
			}
			for _, g := range val.Content {
				if g.Kind != yaml.ScalarNode || g.Tag != "!!str" || g.Value == "" {
					bad(g, "a group is a %s; expected a non-empty string", describe(g))
					ok = false
					continue
				}
				p.Groups = append(p.Groups, g.Value)
			}
		default:
			bad(k, "unknown key %q; expected sub, email or groups", k.Value)
			ok = false
		}
	}
	if p.Subject == "" && ok {
		bad(v, "the entry has no sub; expected sub: the user's name as policies and the audit log will see it")
		ok = false
	}
	return p, ok
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strings.TrimPrefix(n.Tag, "!!")
	}
	return kindName(n.Kind)
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// redactYAMLError keeps a YAML syntax error's position and kind; the
// parser may quote the text around it, which can be a token.
func redactYAMLError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		rest := s[i:]
		if j := strings.Index(rest, ":"); j >= 0 {
			return "YAML syntax error at " + rest[:j]
		}
	}
	return "YAML syntax error"
}
