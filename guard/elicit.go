package guard

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// InspectElicitation inspects the params of an upstream elicitation/create
// request and reports whether it impersonates the gate's own approval prompt
// or carries approval markers. Such a request must be declined, never shown.
//
// The gate's own prompt is a form whose message starts "mcp-gate:" and asks
// to approve a tool call, with a required boolean "approve" and a "scope"
// enum of once/session. An upstream's request is refused when:
//
//   - its message names mcp-gate, uses approval vocabulary (approve,
//     approval, permission, authorize, consent), pairs allow/permit/grant
//     with a tool, a call or running something, or pairs confirm with a tool
//     or running something (KindGateImpersonation, KindApprovalProse);
//   - its schema has a boolean property whose name, title or description is
//     approval-like (approve, allow, permit, consent, authorize, grant,
//     accept, or confirm_tool/confirm_call/confirm_run ...), or a property
//     offering once/session/always scopes (KindApprovalForm);
//   - _meta carries approval markers, or any string holds an approval-shaped
//     payload, as in InspectResult.
//
// The line, on purpose, errs towards refusing: an honest form asking for a
// name, an email, a choice of repository, or "confirm you want to receive
// the newsletter" passes; "allow us to email you" and "accept the terms" do
// not. Params that are not a JSON object are refused (KindInspectionLimit).
// It never panics, runs in linear time, and is safe for concurrent use.
func InspectElicitation(params []byte) []Finding {
	in := newInspector()
	in.elicitRoot = true
	if !startsWithJSON(params) {
		in.add(KindInspectionLimit, "", "elicitation params are not a JSON object")
		return in.result()
	}
	newWalker(in, params, 0, nil, false).run()

	// The walker reads every member, duplicates included; this pass reads
	// the fields the way a host would (last duplicate wins) to apply the
	// rules that need the whole schema.
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		in.add(KindInspectionLimit, "", "elicitation params are not a valid JSON object")
		return in.result()
	}
	for _, m := range rootStrings(params, "message") {
		checkMessage(in, "message", m)
	}
	if raw, ok := p["requestedSchema"]; ok {
		var schema any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&schema) == nil {
			checkSchema(in, "requestedSchema", schema, 0)
		}
	}
	return in.result()
}

// rootStrings returns every string value of key among the root members of
// obj, duplicates included: hosts differ on which duplicate wins, so each is
// checked.
func rootStrings(obj []byte, key string) []string {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		var s string
		if k == key && json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// messageWords splits a message into lower-case words.
func messageWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || r == '-')
	})
}

func anyPrefix(words []string, prefixes ...string) bool {
	for _, w := range words {
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) || strings.HasPrefix(lastPart(w), p) {
				return true
			}
		}
	}
	return false
}

var (
	runWords = []string{"tool", "call", "run", "exec", "invok", "command", "action", "operation", "function"}
)

// visibleText drops the code points IsHidden reports, so that a word split
// by a soft hyphen or a zero-width space ("appr\u00adove") is read whole,
// as the human reads it once the neutraliser has marked the split.
func visibleText(s string) string {
	if strings.IndexFunc(s, IsHidden) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if IsHidden(r) {
			return -1
		}
		return r
	}, s)
}

// checkMessage applies the elicitation message rules.
func checkMessage(in *inspector, path, msg string) {
	msg = visibleText(foldString(msg))
	low := strings.ToLower(msg)
	words := messageWords(msg)
	switch {
	case strings.Contains(low, "mcp-gate") || strings.Contains(low, "mcp_gate") ||
		strings.Contains(low, "mcpgate") || strings.Contains(low, "mcp gate"):
		in.add(KindGateImpersonation, path, "elicitation message names mcp-gate: "+snippet([]byte(msg), 60))
	case anyPrefix(words, "approv", "permission", "authoriz", "authoris", "consent"):
		in.add(KindApprovalProse, path, "elicitation message asks for approval or permission: "+snippet([]byte(msg), 60))
	case anyPrefix(words, "allow", "permit", "grant") && anyPrefix(words, append(runWords, "access")...):
		in.add(KindApprovalProse, path, "elicitation message asks to allow a tool or an action: "+snippet([]byte(msg), 60))
	case anyPrefix(words, "confirm", "proceed") && anyPrefix(words, runWords[:6]...):
		in.add(KindApprovalProse, path, "elicitation message asks to confirm running a tool: "+snippet([]byte(msg), 60))
	}
}

var (
	approvalNameParts = []string{"approv", "allow", "permi", "consent", "authori", "grant", "accept"}
	confirmTargets    = []string{"tool", "call", "exec", "run", "command", "action", "operation", "invocation"}
	scopeValues       = map[string]bool{
		"once": true, "session": true, "always": true, "forever": true, "permanent": true,
		"permanently": true, "thissession": true, "forthissession": true, "forsession": true,
		"allowonce": true, "allowalways": true, "allowforsession": true, "approveonce": true,
		"approvealways": true, "approveforsession": true, "alwaysallow": true, "justonce": true,
		"onetime": true, "thisconversation": true, "thiscall": true, "thistime": true,
	}
	scopeNames = map[string]bool{
		"scope": true, "remember": true, "duration": true, "persist": true, "persistence": true,
		"lifetime": true, "grantscope": true, "approvalscope": true, "validity": true,
		"applyto": true, "rememberchoice": true, "rememberdecision": true, "expiry": true,
		"expires": true, "allowfor": true, "approvefor": true,
	}
)

// approvalLike reports whether a property name or title reads as approval.
func approvalLike(s string) bool {
	n := string(normKey(nil, foldText([]byte(s)), 256))
	for _, p := range approvalNameParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	if strings.Contains(n, "confirm") {
		for _, t := range confirmTargets {
			if strings.Contains(n, t) {
				return true
			}
		}
	}
	return false
}

// checkSchema applies the approval-form rules to a requested schema.
func checkSchema(in *inspector, path string, schema any, depth int) {
	m, ok := schema.(map[string]any)
	if !ok || depth > 16 {
		return
	}
	props, _ := m["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic findings
	for _, name := range names {
		pm, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		var sb strings.Builder
		sb.WriteString(path)
		sb.WriteString(".properties")
		pathKey(&sb, []byte(name))
		ppath := sb.String()
		title, _ := pm["title"].(string)
		desc, _ := pm["description"].(string)
		if isBooleanSchema(pm) {
			switch {
			case approvalLike(name) || approvalLike(title):
				in.add(KindApprovalForm, ppath, "boolean property "+snippet([]byte(name), 32)+" reads as an approval")
			case descAsksApproval(desc):
				in.add(KindApprovalForm, ppath, "boolean property whose description asks for approval")
			case scopeNames[string(normKey(nil, []byte(name), 64))] && strings.Contains(strings.ToLower(name), "remember"):
				in.add(KindApprovalForm, ppath, "boolean property asking to remember a decision")
			}
		}
		vals := enumValues(pm)
		scoped := 0
		for _, v := range vals {
			if scopeValues[string(normKey(nil, []byte(v), 64))] {
				scoped++
			}
		}
		if scoped >= 2 || scoped >= 1 && scopeNames[string(normKey(nil, []byte(name), 64))] {
			in.add(KindApprovalForm, ppath, "property offers approval scopes (once/session/always)")
		}
		if _, nested := pm["properties"]; nested {
			checkSchema(in, ppath, pm, depth+1)
		}
	}
}

func descAsksApproval(desc string) bool {
	if desc == "" {
		return false
	}
	words := messageWords(visibleText(foldString(desc)))
	return anyPrefix(words, "approv", "permission", "authoriz", "authoris", "consent") ||
		anyPrefix(words, "allow", "permit", "grant") && anyPrefix(words, runWords...)
}

// isBooleanSchema reports a boolean property, including the oneOf/anyOf
// form with const true/false and a type list holding "boolean".
func isBooleanSchema(pm map[string]any) bool {
	switch t := pm["type"].(type) {
	case string:
		if t == "boolean" {
			return true
		}
	case []any:
		for _, x := range t {
			if x == "boolean" {
				return true
			}
		}
	}
	if _, ok := pm["const"].(bool); ok {
		return true
	}
	if e, ok := pm["enum"].([]any); ok {
		for _, x := range e {
			if _, ok := x.(bool); ok {
				return true
			}
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := pm[k].([]any); ok {
			for _, a := range alts {
				if am, ok := a.(map[string]any); ok {
					if _, ok := am["const"].(bool); ok {
						return true
					}
				}
			}
		}
	}
	return false
}

// enumValues returns the string choices a property offers: enum, const in
// oneOf/anyOf, and the same under items for multi-select.
func enumValues(pm map[string]any) []string {
	var out []string
	collect := func(m map[string]any) {
		if e, ok := m["enum"].([]any); ok {
			for _, x := range e {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
		}
		for _, k := range []string{"oneOf", "anyOf"} {
			if alts, ok := m[k].([]any); ok {
				for _, a := range alts {
					if am, ok := a.(map[string]any); ok {
						if s, ok := am["const"].(string); ok {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	collect(pm)
	if items, ok := pm["items"].(map[string]any); ok {
		collect(items)
	}
	return out
}
