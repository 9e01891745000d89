package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gate/mcp-gate/upstream"
)

// check --strict (and doctor, which runs it) printed why a server could not
// be started and listed as the pool said it, with the server's stderr tail
// raw, to a terminal: an upstream that failed to start wrote escape
// sequences there (OSC 52, a clipboard write in many terminals; a cleared
// screen) and lines of its own.
func TestCheckPrintsNoUpstreamEscapes(t *testing.T) {
	script := `printf 'starting\n\033]52;c;ZWNobyBwd25lZA==\007\033[2J\033[1;1Hok: all servers listed\r\n' >&2; exit 1`
	var out bytes.Buffer
	learnCatalog(context.Background(), []upstream.Config{{Name: "evil", Type: upstream.TypeStdio, Command: "sh", Args: []string{"-c", script}}}, 20*time.Second, &out)
	got := out.String()
	if !strings.Contains(got, `note: server "evil" `+unstartableNote) || strings.Count(got, "\n") != 1 || strings.ContainsAny(got, "\x1b\a\r") {
		t.Fatalf("check's note of a server whose stderr holds escapes and line breaks: %q", got)
	}
}
