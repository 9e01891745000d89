package policy

import (
	"strings"
	"testing"
)

func TestPinsSection(t *testing.T) {
	const head = "version: 1\nfallback: ask\n"
	p, _, err := Parse("p.yaml", []byte(head), Options{})
	if err != nil || p.PinAction("any") != Ask || p.PinsSet() {
		t.Fatalf("no pins section: %v %v", p.PinAction("any"), err)
	}
	p, ws, err := Parse("p.yaml", []byte(head+"pins:\n  default: allow\n  servers:\n    github: deny\n    docs: ask\n"), Options{KnownServers: []string{"github"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.PinAction("github") != Deny || p.PinAction("docs") != Ask || p.PinAction("other") != Allow || !p.PinsSet() {
		t.Fatalf("actions: %v %v %v", p.PinAction("github"), p.PinAction("docs"), p.PinAction("other"))
	}
	if len(ws) != 1 || !strings.Contains(ws[0].String(), `"docs"`) || !strings.Contains(ws[0].String(), "p.yaml:7:") {
		t.Errorf("warnings: %v; want one for the unknown server docs at line 7", ws)
	}
	for _, tc := range []struct{ src, want string }{
		{"pins: ask\n", `p.yaml:3:7: pins is "ask"; expected a mapping`},
		{"pins:\n  default: maybe\n", `p.yaml:4:12: pins.default is "maybe"; expected ask, deny or allow`},
		{"pins:\n  defualt: ask\n", `p.yaml:4:3:`},
		{"pins:\n  servers:\n    GitHub: deny\n", `p.yaml:5:5: pins.servers has the key "GitHub"; expected a server key`},
		{"pins:\n  servers:\n    github: [deny]\n", `p.yaml:5:13: pins.servers.github is a list; expected a string`},
		{"pins:\n  servers: [github]\n", `p.yaml:4:12: pins.servers is a list`},
	} {
		_, _, err := Parse("p.yaml", []byte(head+tc.src), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.src, err, tc.want)
		}
	}
}
