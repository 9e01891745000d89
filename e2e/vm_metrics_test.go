package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Issue 9 (the metrics library swap): a rule's name is the operator's free
// text and becomes a label value. Quotes, backslashes, line breaks, braces
// and non-ASCII in it must neither crash the gate (the library panics on a
// series name it cannot read) nor break or forge the exposition: the real
// binary counts the decision under that name, and the Prometheus text
// parser reads the scrape back with the name intact.
func TestMetricsHostileRuleName(t *testing.T) {
	t.Parallel()
	name := "evil\"} 1\nmcp_gate_forged_total 1\n# HELP x\n\\ {brace} ,a=\"b\" ünï ☃ 𝄞 \\\\\"\\n"
	quoted, err := json.Marshal(name) // a JSON string is a YAML double-quoted scalar
	if err != nil {
		t.Fatal(err)
	}
	pol := writePolicy(t, "version: 1\nfallback: deny\nrules:\n  - name: "+string(quoted)+"\n    match: mcp:honest:echo\n    action: allow\n")
	g := gateCommand(t, map[string]server{"honest": testserver("honest")}, "--policy", pol, "--ops-addr", "127.0.0.1:0")
	sess := g.connect(t, nil)
	base := g.opsAddr(t)
	for range 2 {
		if r := call(t, sess, "honest__echo", map[string]any{"text": "a"}); r.IsError {
			t.Fatalf("echo: %q", resultText(r))
		}
	}

	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, grepLines(body, "decisions_total"))
	}
	if _, forged := fams["mcp_gate_forged_total"]; forged {
		t.Error("a rule name forged a series")
	}
	var got float64
	for _, m := range fams["mcp_gate_decisions_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["rule"] == name && labels["server"] == "honest" && labels["verdict"] == "allow" && labels["kind"] == "tool" {
			got = m.GetCounter().GetValue()
		}
	}
	if got != 2 {
		t.Errorf("decisions under the hostile rule name = %v, want 2:\n%s", got, grepLines(body, "decisions_total"))
	}
	// The gate is still serving after the scrape.
	if r := call(t, sess, "honest__echo", map[string]any{"text": "b"}); r.IsError {
		t.Errorf("echo after the scrape: %q", resultText(r))
	}
}
