package policy

import (
	"errors"
	"os"
	"testing"
)

// /proc/self names whoever reads it: the gate would resolve its own cwd,
// root or descriptors, the server opens its own (a cwd set in the servers
// file, other open files). A path through it cannot be decided, which
// fails closed: a deny applies, an allow does not.
func TestProcSelfFailsClosed(t *testing.T) {
	if _, err := os.Lstat("/proc/self"); err != nil {
		t.Skip("no /proc/self here")
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/proc/self/cwd/x", "/proc/thread-self/cwd/x", "/dev/fd/0", "/proc/self/root/etc/passwd"} {
		if _, err := pathWithin(p, cwd, readKernel); !errors.Is(err, errSelfLink) {
			t.Errorf("pathWithin(%q): %v; want errSelfLink", p, err)
		}
	}
	pol := mustParse(t, `version: 1
fallback: deny
rules:
  - name: workspace
    match: mcp:fs:write
    when: 'path.within(args.path, "`+cwd+`")'
    action: allow
  - name: no-etc
    match: mcp:fs:read
    when: 'path.within(args.path, "/etc")'
    action: deny
  - name: reads
    match: mcp:fs:read
    action: allow
`)
	if d := pol.Decide(Call{Server: "fs", Name: "write", Args: pathArgs("path", "/proc/self/cwd/x")}); d.Verdict != Deny {
		t.Errorf("write through /proc/self/cwd: %s (%s); want deny", d.Verdict, d.Reason)
	}
	if d := pol.Decide(Call{Server: "fs", Name: "read", Args: pathArgs("path", "/proc/self/root/etc/passwd")}); d.Verdict != Deny || d.Rule != "no-etc" {
		t.Errorf("read through /proc/self/root: %s by %s (%s); want deny by no-etc", d.Verdict, d.Rule, d.Reason)
	}
	if d := pol.Decide(Call{Kind: KindResource, Server: "fs", Name: "file:///proc/self/cwd/x"}); d.Verdict != Allow {
		// No resource deny: resources are not resolved at all then.
		t.Errorf("resource: %s (%s)", d.Verdict, d.Reason)
	}
}
