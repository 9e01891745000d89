package guard

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// ordinaryWords hold none of the trigger stems, so results built from them
// take the prefilter-only path, as most real results do.
var ordinaryWords = strings.Fields(`the of and to in is for on that with as by this from at
are be it or an was which not have has but all can more one will their other also into
file files directory path size bytes read write open close server client request response
error errors warning info debug build test tests package module function functions method
return returns value values type types field fields struct string int bool list map key
query result results row rows column table index database user users name email time date
commit branch merge pull issue issues review comment comments line lines code source config
setting settings option options default local remote network host port address status ok
success failed done running started stopped version release update updated created deleted
json yaml http https api data object array number text content output input stream buffer`)

func ordinaryText(n int, seed int64) string {
	r := rand.New(rand.NewSource(seed))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(ordinaryWords[r.Intn(len(ordinaryWords))])
		switch r.Intn(14) {
		case 0:
			b.WriteString(".\n")
		case 1:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// ordinaryJSON returns a result whose structuredContent is a list of
// file-like records, about n bytes long.
func ordinaryJSON(n int) []byte {
	type rec struct {
		ID       int      `json:"id"`
		Name     string   `json:"name"`
		Path     string   `json:"path"`
		Size     int      `json:"size"`
		Modified string   `json:"modified"`
		Tags     []string `json:"tags"`
		Summary  string   `json:"summary"`
	}
	var items []rec
	size := 0
	for i := 0; size < n; i++ {
		r := rec{ID: i, Name: fmt.Sprintf("file_%d.go", i), Path: fmt.Sprintf("/src/pkg/%d/file_%d.go", i%97, i),
			Size: i * 37 % 100000, Modified: "2024-11-12T10:41:03Z", Tags: []string{"go", "source"},
			Summary: ordinaryText(60, int64(i))}
		items = append(items, r)
		size += 200
	}
	return mustJSON(map[string]any{"content": []any{map[string]any{"type": "text", "text": "listing"}},
		"structuredContent": map[string]any{"items": items}})
}

// githubLikeJSON is 1 MB of repository records, each carrying a
// "permissions" object: it triggers the prefilter on every record, the
// slow path's realistic worst case.
func githubLikeJSON(n int) []byte {
	var items []any
	size := 0
	for i := 0; size < n; i++ {
		items = append(items, map[string]any{
			"id": i, "full_name": fmt.Sprintf("octo-org/repo-%d", i), "private": i%3 == 0,
			"description":   ordinaryText(80, int64(i)),
			"permissions":   map[string]any{"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
			"allow_forking": true, "default_branch": "main",
		})
		size += 330
	}
	return textResult(string(mustJSON(items)))
}

var benchInputs = func() map[string][]byte {
	m := map[string][]byte{
		"text-1KB":          textResult(ordinaryText(1<<10, 1)),
		"text-1MB":          textResult(ordinaryText(1<<20, 2)),
		"json-1MB":          ordinaryJSON(1 << 20),
		"text-1MB-one-stem": textResult(ordinaryText(1<<19, 3) + " Permission granted. " + ordinaryText(1<<19, 4)),
		"json-1MB-github":   githubLikeJSON(1 << 20),
	}
	return m
}()

func BenchmarkInspectResult(b *testing.B) {
	for _, name := range []string{"text-1KB", "text-1MB", "json-1MB", "text-1MB-one-stem", "json-1MB-github"} {
		in := benchInputs[name]
		b.Run(name, func(b *testing.B) {
			if got := InspectResult(in); got != nil {
				b.Fatalf("benchmark input is flagged: %+v", got)
			}
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				InspectResult(in)
			}
		})
	}
}

// BenchmarkRelayBaseline is a stand-in for the cost of relaying a result:
// decoding the JSON-RPC response with the result kept raw and encoding it
// again, with encoding/json. (go-sdk's own codec measured 25–35 ms for 1 MB
// on the machine that produced the figures in doc.go.)
func BenchmarkRelayBaseline(b *testing.B) {
	type msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}
	for _, name := range []string{"text-1KB", "text-1MB", "json-1MB"} {
		wire := []byte(`{"jsonrpc":"2.0","id":7,"result":` + string(benchInputs[name]) + `}`)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				var m msg
				if err := json.Unmarshal(wire, &m); err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(&m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkInspectElicitation(b *testing.B) {
	in := []byte(`{"mode":"form","message":"Which repository should I use?","requestedSchema":{"type":"object","properties":{"repo":{"type":"string","enum":["octo-org/web","octo-org/api"]}},"required":["repo"]}}`)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		InspectElicitation(in)
	}
}

func BenchmarkNeutralize(b *testing.B) {
	inputs := map[string]string{
		"clean-1KB":       ordinaryText(1<<10, 5),
		"clean-1MB":       ordinaryText(1<<20, 6),
		"non-ascii-1MB":   strings.Repeat("Grüße — naïve café “quoted” ", 1<<20/36),
		"hidden-1MB":      strings.Repeat("plain \x1b[31mred\x1b[0m text\u200b ", 1<<20/32),
		"description-200": "Search issues and pull requests in a repository. Returns at most 100 results per page.",
	}
	for _, name := range []string{"description-200", "clean-1KB", "clean-1MB", "non-ascii-1MB", "hidden-1MB"} {
		s := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				Neutralize(s)
			}
		})
	}
}

func BenchmarkNeutralizeJSON(b *testing.B) {
	inputs := map[string][]byte{
		"clean-1MB":     textResult(ordinaryText(1<<20, 7)),
		"non-ascii-1MB": textResult(strings.Repeat("Grüße — naïve café “quoted” ", 1<<20/36)),
		"hidden-1MB":    textResult(strings.Repeat("plain \x1b[31mred\x1b[0m text\u200b ", 1<<20/32)),
	}
	for _, name := range []string{"clean-1MB", "non-ascii-1MB", "hidden-1MB"} {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := NeutralizeJSON(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
