package policy

import (
	"strings"
	"testing"
)

// A resource deny on a file: URI holds against the same path in another
// case, as a case-insensitive file system opens it, for reads and lists
// alike; other schemes and other servers are not touched.
func TestResourceDenyFoldsFileCase(t *testing.T) {
	p := mustParse(t, `version: 1
fallback: deny
deny:
  - "resource:fs:file:///private/etc/**"
  - "resource:fs:file:///Users/me/.ssh/*"
  - "resource:*:notes://Secret"
`)
	for _, tt := range []struct {
		server, uri string
		deny        bool
	}{
		{"fs", "file:///private/etc/passwd", true},
		{"fs", "file:///private/ETC/passwd", true},
		{"fs", "FILE:///PRIVATE/Etc/passwd", true},
		// A file: URI only as a WHATWG parser reads it.
		{"fs", " file:///private/ETC/passwd", true},
		{"fs", "fi\tle:///private/ETC/passwd", true},
		{"fs", "file:///users/ME/.SSH/id_rsa", true},
		{"fs", "file:///private/etc2/passwd", false},
		{"fs", "file:///Users/me/notes", false},
		{"other", "file:///private/ETC/passwd", false},
		{"fs", "notes://secret", false}, // not a file: its server decides what case means
		{"fs", "notes://Secret", true},
	} {
		d := p.Decide(Call{Kind: KindResource, Server: tt.server, Name: tt.uri})
		if (d.Verdict == Deny) != tt.deny {
			t.Errorf("%s %s: %s (%s); want deny %v", tt.server, tt.uri, d.Verdict, d.Reason, tt.deny)
		}
		if h := p.Hidden(KindResource, tt.server, tt.uri); h != tt.deny {
			t.Errorf("%s %s: hidden %v; want %v", tt.server, tt.uri, h, tt.deny)
		}
		if tt.deny && strings.Contains(tt.uri, "ETC") && !strings.Contains(d.Reason, "regardless of case") {
			t.Errorf("%s: the reason does not say how the URI was read: %s", tt.uri, d.Reason)
		}
	}
}
