package naming

import (
	"errors"
	"strings"
	"testing"
)

func TestPolicyName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp:github:create_issue"},
		{"fs", "a:b", "mcp:fs:a:b"},
		{"fs", "", "mcp:fs:"},
		{"fs", "日本", "mcp:fs:日本"},
		// Glob characters are escaped, so the printed name is a glob that
		// matches exactly this tool; a colon in the server too.
		{"fs", "a*b", `mcp:fs:a\*b`},
		{"fs", `[x]{y}?\`, `mcp:fs:\[x\]\{y\}\?\\`},
		{"a:b", "c", `mcp:a\:b:c`},
	} {
		if got := PolicyName(tc.server, tc.tool); got != tc.want {
			t.Errorf("PolicyName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if got := (Key{tc.server, tc.tool}).String(); got != tc.want {
			t.Errorf("Key.String() = %q, want %q", got, tc.want)
		}
	}
}

func TestParseSpelling(t *testing.T) {
	for _, tc := range []struct {
		in, gate string
		want     Key
	}{
		{"mcp:github:create_issue", "gate", Key{"github", "create_issue"}},
		{"mcp:fs:a:b", "gate", Key{"fs", "a:b"}},
		{"mcp:fs:", "gate", Key{"fs", ""}},
		{"mcp:fs:read file.txt", "gate", Key{"fs", "read file.txt"}},
		{"mcp:fs:日本", "gate", Key{"fs", "日本"}},
		{"mcp:shell:a:b", "gate", Key{"shell", "a:b"}},
		{`mcp:fs:a\*b`, "gate", Key{"fs", "a*b"}},
		{"mcp:fs:a*b", "gate", Key{"fs", "a*b"}},
		{`mcp:fs:\\x`, "gate", Key{"fs", `\x`}},
		{"mcp:mcp:x", "gate", Key{"mcp", "x"}},
		{"github__create_issue", "gate", Key{"github", "create_issue"}},
		{"fs__a__b", "gate", Key{"fs", "a__b"}},
		{"fs__", "gate", Key{"fs", ""}},
		{"fs___x", "gate", Key{"fs", "_x"}},
		{"mcp__gate__github__create_issue", "gate", Key{"github", "create_issue"}},
		{"mcp__my-gate__github__create_issue", "my-gate", Key{"github", "create_issue"}},
		{"mcp__gate__fs__a__b", "gate", Key{"fs", "a__b"}},
		// A server keyed "mcp" whose tool has no "__" is read as bare.
		{"mcp__tool", "gate", Key{"mcp", "tool"}},
		// Not hash-shaped: too few digits, uppercase, too many, no '_'.
		{"gh__get_1a2b3c4", "gate", Key{"gh", "get_1a2b3c4"}},
		{"gh__get_1A2B3C4D", "gate", Key{"gh", "get_1A2B3C4D"}},
		{"gh__get_1a2b3c4d1a2b3c4d1", "gate", Key{"gh", "get_1a2b3c4d1a2b3c4d1"}},
		{"gh__get1a2b3c4d", "gate", Key{"gh", "get1a2b3c4d"}},
		{"gh__1a2b3c4d", "gate", Key{"gh", "1a2b3c4d"}},
	} {
		got, err := ParseSpelling(tc.in, tc.gate)
		if err != nil || got != tc.want {
			t.Errorf("ParseSpelling(%q, %q) = %#v, %v; want %#v", tc.in, tc.gate, got, err, tc.want)
		}
	}
}

func TestParseSpellingErrors(t *testing.T) {
	for _, tc := range []struct {
		in, gate, wantErr string
		hashed            bool
	}{
		{"mcp:github", "gate", `no ':' after the server; expected mcp:<server>:<tool>`, false},
		{"mcp::x", "gate", "empty server", false},
		{"mcp:GitHub:x", "gate", `server "GitHub" with 'G' at byte 0`, false},
		{"mcp:a_b:x", "gate", `server "a_b" with '_' at byte 1`, false},
		{"", "gate", "empty wire name", false},
		{"github", "gate", `no "__" between server and tool`, false},
		{"github_x", "gate", `no "__" between server and tool`, false},
		{"git hub__x", "gate", `' ' at byte 3; expected a wire name`, false},
		{"mcp__gate__fs__é", "gate", `'é' at byte 15`, false},
		{"__x", "gate", "empty server", false},
		{"a_b__c", "gate", `server "a_b"`, false},
		{"-a__c", "gate", `server "-a"`, false},
		{"mcp__other__github__x", "gate", `host prefix of a gate named "other"; expected "mcp__gate__"`, false},
		{"mcp__gate__github__x", "other", `host prefix of a gate named "gate"; expected "mcp__other__"`, false},
		{"github__x", "bad gate", `gate name "bad gate"`, false},
		{"github__x", "", "gate name is empty", false},
		{"github__create_1a2b3c4d", "gate", `ends in "_1a2b3c4d"`, true},
		{"mcp__gate__github__c_0123456789abcdef", "gate", "cannot be reversed without the catalog", true},
		{"github__c_0000000000", "gate", "expected the policy spelling mcp:github:<original tool name>", true},
	} {
		got, err := ParseSpelling(tc.in, tc.gate)
		if err == nil {
			t.Errorf("ParseSpelling(%q, %q) = %#v, want an error containing %q", tc.in, tc.gate, got, tc.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseSpelling(%q, %q) error %q; want it to contain %q", tc.in, tc.gate, err, tc.wantErr)
		}
		if errors.Is(err, ErrHashedWireName) != tc.hashed {
			t.Errorf("ParseSpelling(%q, %q): errors.Is(ErrHashedWireName) = %v, want %v", tc.in, tc.gate, !tc.hashed, tc.hashed)
		}
		if got != (Key{}) {
			t.Errorf("ParseSpelling(%q, %q) returned %#v with its error", tc.in, tc.gate, got)
		}
	}
}

func TestResolve(t *testing.T) {
	const gate = "gate"
	long := Key{"github", strings.Repeat("create_something_", 5)}
	dot := Key{"fs", "read.file"}
	hex := Key{"gh", "get_1a2b3c4d"} // plain, but hash-shaped
	// A server keyed "mcp" whose wire name reads as the host-prefixed name
	// of another key: the host reading wins.
	mcp, ab := Key{"mcp", "gate__a__b"}, Key{"a", "b"}
	keys := []Key{long, dot, hex, mcp, ab, {"github", "create_issue"}}
	tab := Build(Budget(gate), keys)
	for _, k := range keys {
		w, _ := tab.Wire(k)
		spellings := []string{k.PolicyName(), "mcp__" + gate + "__" + w}
		if k != mcp {
			spellings = append(spellings, w)
		}
		for _, s := range spellings {
			if got, err := tab.Resolve(s, gate); err != nil || got != k {
				t.Errorf("Resolve(%q) = %#v, %v; want %#v", s, got, err, k)
			}
		}
	}
	if got, err := tab.Resolve("mcp__gate__a__b", gate); err != nil || got != ab {
		t.Errorf("Resolve(%q) = %#v, %v; want the host reading %#v", "mcp__gate__a__b", got, err, ab)
	}
	// The wire spellings of the hashed and sanitised keys are only right
	// through the table.
	for _, k := range []Key{long, dot} {
		w, _ := tab.Wire(k)
		if got, err := ParseSpelling(w, gate); err == nil && got == k {
			t.Errorf("ParseSpelling(%q) recovered %#v without the catalog; the test does not test Resolve", w, k)
		}
	}
	// Unknown to the table: falls back to ParseSpelling.
	if got, err := tab.Resolve("mcp__gate__later__tool", gate); err != nil || got != (Key{"later", "tool"}) {
		t.Errorf("Resolve of a key not in the table = %#v, %v", got, err)
	}
	if _, err := tab.Resolve("later__tool_deadbeef", gate); !errors.Is(err, ErrHashedWireName) {
		t.Errorf("Resolve of an unknown hash-shaped name = %v, want ErrHashedWireName", err)
	}
	if _, err := tab.Resolve("github__create_issue", "bad gate"); err == nil {
		t.Error("Resolve accepted an invalid gate name")
	}
	var nilTab *Table
	if got, err := nilTab.Resolve("mcp__gate__a__b", gate); err != nil || got != (Key{"a", "b"}) {
		t.Errorf("nil table Resolve = %#v, %v", got, err)
	}
}

// TestPolicyNameRoundTrip: SplitPolicyName reads back what
// FormatPolicyName writes, whatever the server and the name hold.
func TestPolicyNameRoundTrip(t *testing.T) {
	for _, tc := range [][2]string{{"s", "a:b"}, {"a:b", "c:d"}, {`\`, `\`}, {"*", "**"}, {"x", ":"}, {"[", "]"}, {"s", "{a,b}"}} {
		for _, ns := range []string{"mcp", "prompt", "resource"} {
			name := FormatPolicyName(ns, tc[0], tc[1])
			gotNS, server, item, hasItem, err := SplitPolicyName(name)
			if err != nil || gotNS != ns || server != tc[0] || item != tc[1] || !hasItem {
				t.Errorf("SplitPolicyName(%q) = %q, %q, %q, %v, %v; want %q, %q, %q", name, gotNS, server, item, hasItem, err, ns, tc[0], tc[1])
			}
		}
	}
	if _, _, _, _, err := SplitPolicyName(`mcp:s:x\`); err == nil {
		t.Error("a trailing lone backslash was accepted")
	}
}
