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
	return inspectHeld(result)
}

// inspectHeld is InspectResult for a result that mayHold a finding.
func inspectHeld(result []byte) []Finding {
	in := newInspector()
	if !startsWithJSON(result) {
		// Not a result object: read it as text, which also finds any
		// JSON inside it.
		in.proseReadings(result, nil, func() string { return "" })
	}
	newWalker(in, result, 0, nil, false).run()
	return in.result()
}

// mayHold reports whether b holds a trigger stem or an escape that could
// hide one, as written or once folded (see fold.go): " yes," and "1. yes"
// spelt with a no-break space, "ａｐｐｒｏｖｅ" in fullwidth letters.
func mayHold(b []byte) bool {
	p, _, high := pf().nextHigh(b, 0)
	if p < len(b) {
		return true
	}
	return mayHoldRest(b, high, true)
}

// mayHoldRest is mayHold for b in which the prefilter found no stem; high
// says whether b has a byte >= 0x80, slash whether it may have a backslash
// (without one, no escape can hide a stem or a folded character).
func mayHoldRest(b []byte, high, slash bool) bool {
	var c escCursor
	if slash {
		c = newEscCursor(b)
		if c.next(0) < len(b) {
			return true
		}
	}
	// Only a result with a byte >= 0x80 or an escape of a folded
	// character can read differently folded, and only one that holds a
	// folded character does.
	if !c.fold && (!high || indexFoldRaw(b, 0) == len(b)) {
		return false
	}
	f, lines := foldJSON(b, ' ')
	if stemIn(f) {
		return true
	}
	if lines { // the other reading of a line separator
		f, _ = foldJSON(b, '\n')
		return stemIn(f)
	}
	return false
}

// stemIn reports a stem, or an escape that could hide one, in b.
func stemIn(b []byte) bool {
	if p, _ := pf().next(b, 0); p < len(b) {
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

// proseReadings reads text as prose once folded (see fold.go), and, when
// text holds a line separator, once more with those read as line feeds,
// unless the first reading found something. folded is text already folded
// by foldText, or nil.
func (in *inspector) proseReadings(text, folded []byte, path func() string) {
	if folded == nil {
		folded = foldText(text)
	}
	n := len(in.findings)
	in.prose(folded, path)
	if len(in.findings) == n && !in.full() && len(folded) != len(text) && hasLineSep(text) {
		in.prose(foldLines(text), path)
	}
}
