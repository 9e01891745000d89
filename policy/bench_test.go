package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchPolicy renders a glob-only policy of n rules shaped like a large
// real one: n/20 servers, each with exact tool names (60%) and name globs
// such as verb3_* (30%), plus up to 10 patterns over every server such as
// mcp:*:danger3_*; the verdicts rotate through deny, ask and allow.
func benchPolicy(n int) string {
	servers := max(1, n/20)
	var deny, ask, allow []string
	wild := 0
	for i := range n {
		s := i % servers
		var pat string
		switch {
		case i%10 == 9 && wild < 10:
			pat = fmt.Sprintf(`"mcp:*:danger%d_*"`, wild)
			wild++
		case i%10 >= 6:
			pat = fmt.Sprintf(`"mcp:srv%d:verb%d_*"`, s, i)
		default:
			pat = fmt.Sprintf("mcp:srv%d:tool%d", s, i)
		}
		switch i % 3 {
		case 0:
			deny = append(deny, pat)
		case 1:
			ask = append(ask, pat)
		default:
			allow = append(allow, pat)
		}
	}
	var b strings.Builder
	b.WriteString("version: 1\nfallback: ask\n")
	for _, l := range []struct {
		key  string
		pats []string
	}{{"deny", deny}, {"ask", ask}, {"allow", allow}} {
		b.WriteString(l.key + ":\n")
		for _, p := range l.pats {
			b.WriteString("  - " + p + "\n")
		}
	}
	return b.String()
}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		p := mustParse(b, benchPolicy(n))
		servers := max(1, n/20)
		mid := n / 2 / 10 * 10 // an exact tool name: i%10 < 6
		calls := []struct {
			name string
			call Call
		}{
			{"exact", Call{Server: fmt.Sprintf("srv%d", mid%servers), Name: fmt.Sprintf("tool%d", mid)}},
			{"glob", Call{Server: fmt.Sprintf("srv%d", 6%servers), Name: "verb6_delete"}},
			{"fallback", Call{Server: fmt.Sprintf("srv%d", 1%servers), Name: "nothing_matches"}},
			{"unknown-server", Call{Server: "elsewhere", Name: "danger3_x"}},
		}
		for _, c := range calls {
			b.Run(fmt.Sprintf("rules=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Decide(c.call)
				}
			})
		}
	}
}

func BenchmarkDecideCEL(b *testing.B) {
	p := mustParse(b, benchPolicy(1000)+`rules:
  - name: writes-inside-workspace
    match: [mcp:filesystem:write_file]
    when: path.within(args.path, "/home/me/work")
    action: allow
  - name: big-payments
    match: mcp:payments:send
    when: args.amount > 1000
    action: ask
`)
	calls := map[string]Call{
		"path.within": {Server: "filesystem", Name: "write_file", Args: json.RawMessage(`{"path":"/home/me/work/src/main.go","content":"package main\n"}`)},
		"comparison":  {Server: "payments", Name: "send", Args: json.RawMessage(`{"amount":5000,"to":"acme"}`)},
	}
	for name, c := range calls {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c)
			}
		})
	}
}

func BenchmarkHidden(b *testing.B) {
	p := mustParse(b, benchPolicy(1000))
	b.ReportAllocs()
	for b.Loop() {
		p.Hidden(KindTool, "srv3", "tool500")
	}
}

// BenchmarkParse measures a reload's parse and index: 1,000 glob rules and
// ten CEL conditions.
func BenchmarkParse(b *testing.B) {
	src := benchPolicy(1000) + "rules:\n"
	for i := range 10 {
		src += fmt.Sprintf("  - {match: mcp:fs%d:write, when: 'path.within(args.path, \"/w%d\") && args.n > %d', action: allow}\n", i, i, i)
	}
	data := []byte(src)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse("bench.yaml", data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
