package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestMessageLimitExact: --max-message-bytes holds to the byte on the real
// gate's input, whatever ends the line: a host request of exactly the
// limit is read (and answered on its merits: an unknown tool), one a byte
// over it, ended by a LF alone, is refused as over the limit (it used to
// be read: the room a line may fill is the limit and a CR LF, and a line
// without the CR got that byte).
func TestMessageLimitExact(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	g := gateCommand(t, map[string]server{"ok": testserver("honest")}, "--max-message-bytes", fmt.Sprint(limit))
	h := startRaw(t, g)
	h.initialize()
	// request is a tools/call of an unknown tool of exactly n bytes.
	request := func(id, n int) string {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"nope__x","arguments":{"pad":"`, id)
		tail := `"}}}`
		return head + strings.Repeat("z", n-len(head)-len(tail)) + tail
	}
	for _, c := range []struct {
		id, n int
		want  string
	}{
		{41, limit, `unknown tool`},
		{42, limit + 1, fmt.Sprintf("exceeds the limit of %d bytes", limit)},
		{43, limit - 1, `unknown tool`},
		{44, limit + 2, fmt.Sprintf("exceeds the limit of %d bytes", limit)},
	} {
		if resp := h.send(fmt.Sprint(c.id), request(c.id, c.n)); !strings.Contains(resp, c.want) {
			t.Errorf("a request of %d bytes (limit %d): got %.300s\nwant it to contain %q", c.n, limit, resp, c.want)
		}
	}
	if resp := h.send("50", `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"ok__echo","arguments":{"text":"alive"}}}`); !strings.Contains(resp, `"text":"alive"`) {
		t.Fatalf("the session did not go on: %s", resp)
	}
}
