package guard

// InspectResult looks through a raw tools/call result object for
// approval-shaped payloads: every text item, JSON embedded in text (whole,
// inline or in a fenced block, up to five levels of JSON in strings),
// structuredContent, embedded resources' text, _meta at any depth and any
// other string of the result. Findings are in reading order, at most 16.
//
// It never panics and runs in time linear in the input. A result that holds
// none of the trigger stems (approv, permi, allow, accept, elicit, ...; see
// stems) in any letter case, and no \u escape of a stem letter, is passed
// after one prefilter pass without being parsed. Input nested, embedded or
// dense beyond the detector's budgets yields a KindInspectionLimit finding:
// it fails closed. It returns nil when nothing is found. It is safe for
// concurrent use.
func InspectResult(result []byte) []Finding {
	if !mayHold(result) {
		return nil
	}
	in := newInspector()
	if !startsWithJSON(result) {
		// Not a result object: read it as text, which also finds any
		// JSON inside it.
		in.prose(result, func() string { return "" })
	}
	newWalker(in, result, 0, nil, false).run()
	return in.result()
}

// mayHold reports whether b holds a trigger stem or an escape that could
// hide one.
func mayHold(b []byte) bool {
	if p, _ := pf.next(b, 0); p < len(b) {
		return true
	}
	c := newEscCursor(b)
	return c.next(0) < len(b)
}

func startsWithJSON(b []byte) bool {
	for _, c := range b {
		if isSpace(c) {
			continue
		}
		return c == '{' || c == '['
	}
	return false
}

func newInspector() *inspector {
	return &inspector{norm: make([]byte, 0, 256)}
}

func (in *inspector) result() []Finding {
	if len(in.findings) == 0 {
		return nil
	}
	return in.findings
}
