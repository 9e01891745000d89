package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The corpus lives in testdata/corpus:
//
//	negative/       real-looking tool output that must pass, placed as a
//	                text item, a resource, structuredContent and a file
//	                returned as JSON text
//	positive/       <kind>__<name>.json payloads and <kind>__<name>.txt prose,
//	                each placed everywhere a result can carry it, in several
//	                spellings; every combination must yield <kind>
//	hard_negative/  benign output the detector refuses on purpose, listed in
//	                testdata/corpus/README.md
//
// testdata/elicitation/{positive,negative} hold elicitation/create params.

type corpusFile struct {
	name string
	kind string // expected kind, positives only
	data []byte
}

func readCorpus(t testing.TB, dir string) []corpusFile {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read corpus %s: %v", dir, err)
	}
	var out []corpusFile
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "README.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		kind, _, _ := strings.Cut(e.Name(), "__")
		out = append(out, corpusFile{name: e.Name(), kind: kind, data: b})
	}
	if len(out) == 0 {
		t.Fatalf("corpus %s is empty", dir)
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func textResult(text string) []byte {
	return mustJSON(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
}

type placement struct {
	name  string
	build func(p []byte) []byte
}

// negativePlaces put benign content where tools put their output.
func negativePlaces(name string, c []byte) []placement {
	var structured any
	if json.Unmarshal(c, &structured) == nil {
		if _, isObj := structured.(map[string]any); !isObj {
			structured = map[string]any{"items": structured}
		}
	} else {
		structured = map[string]any{"output": string(c)}
	}
	return []placement{
		{"text", func(c []byte) []byte { return textResult(string(c)) }},
		{"resource", func(c []byte) []byte {
			return mustJSON(map[string]any{"content": []any{map[string]any{"type": "resource",
				"resource": map[string]any{"uri": "file:///work/" + name, "mimeType": "text/plain", "text": string(c)}}}})
		}},
		{"structuredContent", func([]byte) []byte {
			return mustJSON(map[string]any{"content": []any{map[string]any{"type": "text", "text": "see structuredContent"}},
				"structuredContent": structured})
		}},
		{"file-as-json-text", func(c []byte) []byte {
			return textResult(string(mustJSON(map[string]any{"path": "/work/" + name, "size": len(c), "content": string(c)})))
		}},
	}
}

func TestCorpusNegatives(t *testing.T) {
	files := readCorpus(t, "testdata/corpus/negative")
	total, flagged := 0, 0
	for _, f := range files {
		for _, p := range negativePlaces(f.name, f.data) {
			total++
			if got := InspectResult(p.build(f.data)); got != nil {
				flagged++
				t.Errorf("false positive: %s in %s: %+v", f.name, p.name, got)
			}
		}
	}
	t.Logf("negatives: %d files × 4 places = %d results; false positives: %d (%.1f%%)",
		len(files), total, flagged, 100*float64(flagged)/float64(total))
}

// TestCorpusHardNegatives documents the benign output that is refused on
// purpose (see testdata/corpus/README.md). It fails when one of them stops
// being flagged, so that the list and the docs stay true.
func TestCorpusHardNegatives(t *testing.T) {
	files := readCorpus(t, "testdata/corpus/hard_negative")
	for _, f := range files {
		got := InspectResult(textResult(string(f.data)))
		if got == nil {
			t.Errorf("%s is listed as an accepted false positive but is no longer flagged; move it to negative/ and update README.md", f.name)
			continue
		}
		t.Logf("accepted false positive %s: %s at %s", f.name, got[0].Kind, got[0].Path)
	}
}

// Variations of a JSON payload.
func jsonVariants(t testing.TB, p []byte) map[string][]byte {
	var v any
	if err := json.Unmarshal(p, &v); err != nil {
		t.Fatalf("payload is not JSON: %v", err)
	}
	var compact, pretty bytes.Buffer
	_ = json.Compact(&compact, p)
	_ = json.Indent(&pretty, p, "", "    ")
	return map[string][]byte{
		"compact": compact.Bytes(),
		"pretty":  pretty.Bytes(),
		"upper":   mustJSON(mapStrings(v, strings.ToUpper)),
		"mixed":   mustJSON(mapStrings(v, mixedCase)),
		"nested":  mustJSON(map[string]any{"data": map[string]any{"items": []any{v}}}),
	}
}

// mapStrings applies f to every key and string value, keeping JSON literals.
func mapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[f(k)] = mapStrings(e, f)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapStrings(e, f)
		}
		return out
	case string:
		return f(x)
	}
	return v
}

func mixedCase(s string) string {
	r := []rune(s)
	for i := range r {
		if i%2 == 1 {
			r[i] = unicode.ToUpper(r[i])
		} else {
			r[i] = unicode.ToLower(r[i])
		}
	}
	return string(r)
}

func jsonPlaces() []placement {
	return []placement{
		{"text", func(p []byte) []byte { return textResult(string(p)) }},
		{"text-fenced", func(p []byte) []byte {
			return textResult("Here is the output of the tool:\n\n```json\n" + string(p) + "\n```\n\nLet me know if you need more.")
		}},
		{"text-inline", func(p []byte) []byte { return textResult("Result: " + string(p) + " (took 12 ms)") }},
		{"second-item", func(p []byte) []byte {
			return mustJSON(map[string]any{"content": []any{
				map[string]any{"type": "text", "text": "Listing complete."},
				map[string]any{"type": "text", "text": string(p)}}})
		}},
		{"text-double-encoded", func(p []byte) []byte {
			return textResult(string(mustJSON(map[string]any{"status": "ok", "body": string(p)})))
		}},
		{"structuredContent", func(p []byte) []byte {
			return []byte(`{"content":[{"type":"text","text":"done"}],"structuredContent":{"result":{"data":` + string(p) + `}}}`)
		}},
		{"structuredContent-array", func(p []byte) []byte {
			return []byte(`{"content":[],"structuredContent":{"results":[{"id":1},{"id":2,"data":` + string(p) + `}]}}`)
		}},
		{"resource", func(p []byte) []byte {
			return mustJSON(map[string]any{"content": []any{map[string]any{"type": "resource",
				"resource": map[string]any{"uri": "file:///tmp/out.json", "mimeType": "application/json", "text": string(p)}}}})
		}},
		{"_meta", func(p []byte) []byte {
			return []byte(`{"content":[{"type":"text","text":"ok"}],"_meta":{"vendor.example/trace":{"payload":` + string(p) + `}}}`)
		}},
	}
}

func proseVariants(s string) map[string]string {
	return map[string]string{
		"as-is":    s,
		"upper":    strings.ToUpper(s),
		"lower":    strings.ToLower(s),
		"spaces":   strings.ReplaceAll(s, " ", "   "),
		"newlines": strings.ReplaceAll(s, " ", "\n"),
	}
}

func prosePlaces() []placement {
	return []placement{
		{"text", func(p []byte) []byte { return textResult(string(p)) }},
		{"text-paragraph", func(p []byte) []byte {
			return textResult("Fetched 12 rows from orders.\n\n" + string(p) + "\n\nNext page token: 3f9c2a.")
		}},
		{"text-json", func(p []byte) []byte {
			return textResult(string(mustJSON(map[string]any{"status": "ok", "message": string(p)})))
		}},
		{"resource", func(p []byte) []byte {
			return mustJSON(map[string]any{"content": []any{map[string]any{"type": "resource",
				"resource": map[string]any{"uri": "mem://notes/1", "text": string(p)}}}})
		}},
		{"structuredContent", func(p []byte) []byte {
			return mustJSON(map[string]any{"content": []any{}, "structuredContent": map[string]any{"message": string(p)}})
		}},
		{"_meta", func(p []byte) []byte {
			return mustJSON(map[string]any{"content": []any{}, "_meta": map[string]any{"note": string(p)}})
		}},
	}
}

// escapeVowels rewrites every vowel inside JSON strings as a \u escape,
// which is valid JSON that any parser reads back unchanged.
func escapeVowels(b []byte) []byte {
	var out []byte
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case in && strings.IndexByte("aeiouAEIOU", c) >= 0:
			out = fmt.Appendf(out, `\u%04x`, c)
			continue
		}
		out = append(out, c)
	}
	return out
}

func TestCorpusPositives(t *testing.T) {
	files := readCorpus(t, "testdata/corpus/positive")
	total, detected := 0, 0
	kinds := map[string]int{}
	for _, f := range files {
		kinds[f.kind]++
		check := func(desc string, result []byte) {
			t.Helper()
			for _, r := range [][]byte{result, escapeVowels(result)} {
				total++
				got := InspectResult(r)
				if !slices.ContainsFunc(got, func(x Finding) bool { return x.Kind == f.kind }) {
					t.Errorf("missed %s (%s) in %s: got %+v\nresult: %.300s", f.name, f.kind, desc, got, r)
					continue
				}
				detected++
			}
		}
		if strings.HasSuffix(f.name, ".json") {
			for vn, v := range jsonVariants(t, f.data) {
				for _, p := range jsonPlaces() {
					check(p.name+"/"+vn, p.build(v))
				}
			}
			continue
		}
		text := strings.TrimRight(string(f.data), "\n")
		for vn, v := range proseVariants(text) {
			for _, p := range prosePlaces() {
				check(p.name+"/"+vn, p.build([]byte(v)))
			}
		}
	}
	t.Logf("positives: %d payloads (%d kinds), %d results; detected %d (%.1f%%)",
		len(files), len(kinds), total, detected, 100*float64(detected)/float64(total))
}

func TestElicitationCorpus(t *testing.T) {
	pos := readCorpus(t, "testdata/elicitation/positive")
	for _, f := range pos {
		got := InspectElicitation(f.data)
		if !slices.ContainsFunc(got, func(x Finding) bool { return x.Kind == f.kind }) {
			t.Errorf("missed %s (%s): got %+v", f.name, f.kind, got)
		}
	}
	neg := readCorpus(t, "testdata/elicitation/negative")
	fp := 0
	for _, f := range neg {
		if got := InspectElicitation(f.data); got != nil {
			fp++
			t.Errorf("honest elicitation %s refused: %+v", f.name, got)
		}
	}
	t.Logf("elicitations: %d impersonations, %d honest forms; false positives: %d", len(pos), len(neg), fp)
}
