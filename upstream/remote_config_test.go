package upstream

import (
	"strings"
	"testing"
)

// An http or sse entry's url and headers are checked when the file is read,
// and the errors never quote a header value or the url.
func TestRemoteEntryValidation(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "TOKEN" {
			return "s3cr3t\r\nX-Evil: 1", true
		}
		if k == "GOOD" {
			return "s3cr3t-good", true
		}
		return "", false
	}
	for _, tc := range []struct{ entry, want string }{
		{`{"type":"http","url":"ftp://h/x"}`, `scheme "ftp"`},
		{`{"type":"http","url":"http:///x"}`, "no host"},
		{`{"type":"http","url":"http://h/%zz?k=s3cr3t-good"}`, "not a valid URL"},
		{`{"type":"http","url":"http://h/","headers":{"Authorization":"Bearer ${TOKEN}"}}`, "headers.Authorization: the value holds a line break"},
		{`{"type":"http","url":"http://h/","headers":{"Authorization":"Bearer ${UNSET}"}}`, "${UNSET} is not set"},
		{`{"type":"sse","url":"http://h/","headers":{"mcp-session-id":"x"}}`, `"Mcp-Session-Id" is set by the gate's transport`},
		{`{"type":"http","url":"http://h/","headers":{"Bad Name":"x"}}`, `"Bad Name" is not a valid header name`},
	} {
		_, err := ParseServers("f.json", []byte(`{"mcpServers":{"r":`+tc.entry+`}}`), env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.entry, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the error quotes a secret: %v", tc.entry, err)
		}
	}
	cfgs, err := ParseServers("f.json", []byte(`{"mcpServers":{"r":{"type":"http","url":"https://h/mcp","headers":{"Authorization":"Bearer ${GOOD}"}}}}`), env)
	if err != nil || cfgs[0].Headers["Authorization"] != "Bearer s3cr3t-good" {
		t.Fatalf("a good entry: %v, %+v", err, cfgs)
	}
}
