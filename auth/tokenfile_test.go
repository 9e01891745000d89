package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tokA = "token-of-alice-0123456789"

func digest(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestParseTokens(t *testing.T) {
	good := tokA + ": {sub: alice, email: alice@example.com, groups: [dev, ops]}\n\"" + digest("token-of-bob-0123456789") + "\":\n  sub: bob\n"
	tab, err := ParseTokens("t.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	f := &TokenFile{}
	f.swap(tab, []byte(good))
	p, err := f.Authenticate(context.Background(), tokA)
	if err != nil || p.Subject != "alice" || p.Email != "alice@example.com" || strings.Join(p.Groups, ",") != "dev,ops" {
		t.Fatalf("alice: %+v %v", p, err)
	}
	if p, err := f.Authenticate(context.Background(), "token-of-bob-0123456789"); err != nil || p.Subject != "bob" {
		t.Fatalf("bob by digest: %+v %v", p, err)
	}
	if _, err := f.Authenticate(context.Background(), "token-of-carol-0123456789"); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("unknown token: %v", err)
	}

	for _, c := range []struct{ text, want string }{
		{"- a\n- b\n", "t.yaml:1:1: the file is a list; expected a mapping"},
		{tokA + ": {sub: alice, role: admin}\n", "t.yaml:1:41: unknown key \"role\"; expected sub, email or groups"},
		{tokA + ": {email: a@b}\n", "t.yaml:1:28: the entry has no sub"},
		{"short: {sub: a}\n", "t.yaml:1:1: a token is 5 characters long; expected at least 16"},
		{"\"sha256:abc\": {sub: a}\n", "t.yaml:1:1: a sha256: key is not 64 hex digits"},
		{tokA + ": {sub: a}\n\"" + digest(tokA) + "\": {sub: b}\n", "t.yaml:2:1: this token is listed already on line 1"},
		{tokA + ": {sub: a, groups: dev}\n", "groups is a str; expected a list of strings"},
		{tokA + ": {sub: [a]}\n", "sub is a list; expected a string"},
		{tokA + ": {sub: a, sub: b}\n", "t.yaml:1:37: the key \"sub\" is given twice"},
		{tokA + ": [\n", "YAML syntax error at line"},
	} {
		_, err := ParseTokens("t.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), tokA) {
			t.Errorf("%q: the error quotes the token: %v", c.text, err)
		}
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte(tokA + ": {sub: alice, groups: [dev]}\n"))
	f.Add([]byte("\"" + digest(tokA) + "\": {sub: bob, email: b@x}\n"))
	f.Add([]byte("a: &x {sub: a}\nb: *x\n"))
	f.Add([]byte("[1, 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseTokens("f.yaml", data)
		if err != nil {
			return
		}
		for _, p := range tab {
			if p.Subject == "" {
				t.Fatalf("an entry without a subject was accepted from %q", data)
			}
		}
	})
}

// The file is followed: a revocation applies without a restart, a broken
// edit and a deleted file keep the last good tokens.
func TestTokenFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.yaml")
	write := func(s string) {
		os.WriteFile(path+".tmp", []byte(s), 0o600)
		os.Rename(path+".tmp", path)
	}
	tokB := "token-of-bob-0123456789"
	write(tokA + ": {sub: alice}\n" + tokB + ": {sub: bob}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := OpenTokenFile(ctx, path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(tok string) bool { _, err := f.Authenticate(ctx, tok); return err == nil }
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rev := f.Revision()
	write(tokA + ": {sub: alice, role: x}\n") // broken
	time.Sleep(4 * pollEvery)
	if !ok(tokA) || !ok(tokB) || f.Revision() != rev {
		t.Fatal("a broken edit changed the tokens")
	}
	write(tokA + ": {sub: alice}\n") // bob revoked
	wait("bob revoked", func() bool { return !ok(tokB) })
	if !ok(tokA) {
		t.Fatal("alice revoked with bob")
	}
	os.Remove(path)
	time.Sleep(4 * pollEvery)
	if !ok(tokA) {
		t.Fatal("a deleted file took the tokens away")
	}
	cancel()
	<-f.Done()
}
