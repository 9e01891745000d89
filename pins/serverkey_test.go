package pins

import (
	"regexp"
	"testing"
)

// The byte check of a server key accepts exactly what the pattern it
// replaced (upstream.ServerKeyPattern) accepts.
func TestServerKeyShape(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	for _, s := range []string{"", "a", "0", "-", "-a", "a-", "a--b", "github", "my-server-2", "A", "aB", "a_b", "a.b", "a/b", "../x", "a b", "a\n", "é", "a\x00", "z9-", "9"} {
		if got, want := serverKey.MatchString(s), re.MatchString(s); got != want {
			t.Errorf("serverKey.MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzServerKeyShape(f *testing.F) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	for _, s := range []string{"", "a-b", "-", "A", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := serverKey.MatchString(s), re.MatchString(s); got != want {
			t.Fatalf("serverKey.MatchString(%q) = %v, want %v", s, got, want)
		}
	})
}
