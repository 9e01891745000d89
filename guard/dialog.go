package guard

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Host permission dialogs. Claude Code, Codex, Gemini CLI and the IDE hosts
// ask before a tool call with a menu of their own drawing:
//
//	Do you want to proceed?                       Allow execution of: 'rm'?
//	❯ 1. Yes                                      ● 1. Yes, allow once
//	  2. Yes, and don't ask again for ... in ...    2. Yes, allow always ...
//	  3. No, and tell Claude what to do ... (esc)   3. No, suggest changes (esc)
//
// A tool result that draws such a menu can make the human answer a question
// the gate never asked, or make the model believe one was answered
// ("✔ 1. Yes (selected)"). No single word marks one: "Do you want to
// continue? [Y/n]" and inquirer's "❯ Yes / No" are ordinary CLI output. So
// the lines around each trigger stem are read as a menu and scored:
//
//	+1  an option that says yes (yes, oui, ja, allow, approve, accept, ...)
//	+2  a numbered yes option in a menu with a cursor: a selection glyph
//	    (❯ › ● → ✔ "(selected)") on some but not all options, or on the
//	    only one; a glyph on every line is a quote, not a cursor
//	+1  an option that says no (no, deny, reject, cancel, skip, ...)
//	+1  a question; +1 more when it asks to proceed, run, allow, apply, ...
//	+2  an option in the hosts' own words ("don't ask again", "allow once",
//	    "for this session", "tell Claude what to do differently", "(esc)")
//	+1  each of the hosts' other marks nearby (a host's name, "(esc)",
//	    "shift+tab", "Bash command", "Tool use", ...), at most 2
//
// A menu scoring dialogThreshold or more, with a yes option or an option in
// the hosts' words, is refused as KindHostDialog. Real CLI prompts score at
// most 4: a question, a yes and a no, and no cursor on numbered options or
// no host wording.
const (
	dialogThreshold   = 5
	dialogLinesBefore = 10   // lines read above the line of the stem
	dialogLinesAfter  = 12   // and below it
	dialogBytesBefore = 1200 // at most these many bytes either side
	dialogBytesAfter  = 1200
)

// maxDialogWork bounds the bytes of windows read as dialogs in one call.
// Windows do not overlap much (a hit inside the last window is skipped),
// so ordinary text reads about twice its length at most; a hostile text
// made of stems on short lines reaches it and is refused
// (KindInspectionLimit) rather than read for long.
const maxDialogWork = 16 << 20

type dialogItem struct {
	a, b     int  // the label's span in dialogScratch.low
	numbered bool // "1.", "2)", "(3)", "[1]", "a)", "y -"
	selected bool // a selection glyph or an answered mark
	answered bool // an answered mark: ✔, ✓, [x], "(selected)"
	marked   bool // any option marker: numbered, selected, bullet, radio, checkbox, button, separator
	question bool // holds a question mark that ends a question
}

type dialogScratch struct {
	low   []byte // the window, ASCII lower-cased
	items []dialogItem
}

// dialogWindow returns the bounds of the lines around text[h].
func dialogWindow(text []byte, h int) (a, b int) {
	lo := max(0, h-dialogBytesBefore)
	a = lo
	n := 0
	for k := h - 1; k >= lo; k-- {
		if text[k] == '\n' {
			n++
			if n > dialogLinesBefore {
				a = k + 1
				break
			}
		}
	}
	hi := min(len(text), h+dialogBytesAfter)
	b = hi
	n = 0
	for k := h; k < hi; k++ {
		if text[k] == '\n' {
			n++
			if n > dialogLinesAfter {
				b = k
				break
			}
		}
	}
	return a, b
}

// dialog reads the window around the stem at h as a menu. It returns the
// end of the window read, so that the caller skips the stems inside it.
func (in *inspector) dialog(text []byte, h int, path func() string) (end int) {
	a, b := dialogWindow(text, h)
	in.dialogWork += b - a
	if in.dialogWork > maxDialogWork {
		in.add(KindInspectionLimit, path(), "more text with dialog vocabulary than the detector reads ("+
			strconv.Itoa(maxDialogWork>>20)+" MiB of lines); not inspected further")
		in.stopped = true
		return len(text)
	}
	if !mayDrawMenu(text[a:b]) {
		return b
	}
	d := &in.dlg
	if score, why := d.judge(text[a:b]); score >= dialogThreshold {
		in.add(KindHostDialog, path(), truncDetailN("imitates a host's permission dialog: "+snippet(why, proseSnip), proseSnip+48))
		return len(text) // one finding per text is enough
	}
	return b
}

// mayDrawMenu is a quick look for what every menu the judge can flag has:
// a line that starts, after indentation, quoting and borders, with an
// option marker (a digit, a bracket, a bullet, a glyph, a key letter), or
// a line that asks ("...?", "Claude wants to run:"), or a menu drawn on
// one line (selection glyphs, " | ", HTML, JSON strings).
// Prose, whose lines start with words, is passed over without being
// segmented.
func mayDrawMenu(w []byte) bool {
	for i := 0; i < len(w); {
		// Skip indentation, borders and quoting at the start of a line.
		for i < len(w) && (w[i] == ' ' || w[i] == '\t' || w[i] == '\r' || w[i] == '|' || w[i] == '*' || w[i] == '#') {
			i++
		}
		if i < len(w) {
			c := w[i]
			switch {
			case c >= utf8.RuneSelf, '1' <= c && c <= '9', c == '[', c == '(', c == '-', c == '+', c == '<', c == '>':
				return true
			case isASCIILetter(c) && i+2 < len(w) && (w[i+1] == ')' || w[i+1] == ' ' && w[i+2] == '-'):
				return true // "a) Yes", "y - Yes"
			}
		}
		j := bytes.IndexByte(w[i:], '\n')
		if j < 0 {
			break
		}
		// A question that ends its line may be followed by options
		// without markers ("Allow once", "Deny").
		if k := bytes.TrimRight(w[i:i+j], " \t\r"); len(k) > 0 && (k[len(k)-1] == '?' || k[len(k)-1] == ':') {
			return true
		}
		i += j + 1
	}
	return hasAny(w, oneLineMenuMarks)
}

// oneLineMenuMarks betray a menu drawn inside a line.
var oneLineMenuMarks = []string{"❯", "›", "●", "◉", "✔", "✓", "→", " | ", "<li", "<button", "<p>", `","`, `", "`}

// judge scores the menu in w and returns the score and the text to quote
// (lower-cased): the question, or else the first option.
func (d *dialogScratch) judge(w []byte) (score int, quote []byte) {
	// The window lower-cased, with runs of spaces, tabs and Unicode
	// spaces read as one space ("Do  you\u00a0want" is "do you want"),
	// carriage returns dropped.
	d.low = d.low[:0]
	space := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		n := 0
		switch {
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			n = 1
		case c == '\r':
			continue
		case c >= utf8.RuneSelf:
			n = unicodeSpace(w[i:])
		}
		if n > 0 {
			i += n - 1
			if !space {
				d.low = append(d.low, ' ')
			}
			space = true
			continue
		}
		space = false
		d.low = append(d.low, lowerASCII(c))
	}
	d.items = d.items[:0]
	d.segment()

	var yes, yesNum, yesAnswered, no, hostOpt, keyHint, q, qVerb bool
	opts, sel := 0, 0
	afterQ := false // unmarked short lines right after a question are its options
	for i := range d.items {
		it := &d.items[i]
		label := d.low[it.a:it.b]
		if !it.question && isRequestLine(label) {
			it.question = true
		}
		if it.question {
			afterQ = true
		} else if !it.marked {
			if afterQ && it.b-it.a <= 60 && (yesLike(label) || noLike(label)) {
				it.marked = true
			} else {
				afterQ = false
			}
		}
		if it.question && !q {
			q = true
			quote = d.low[it.a:it.b]
			qVerb = hasDialogVerb(label)
		} else if it.question && !qVerb && hasDialogVerb(label) {
			quote, qVerb = d.low[it.a:it.b], true
		}
		if !it.marked {
			continue
		}
		y, n := yesLike(label), noLike(label)
		h := (y || n || startsWord(label, "always")) && hasAny(label, hostOptionWords)
		if !y && !n && !h {
			continue
		}
		opts++
		if it.selected {
			sel++
		}
		if quote == nil {
			quote = d.low[it.a:it.b]
		}
		yes = yes || y
		yesNum = yesNum || y && it.numbered
		yesAnswered = yesAnswered || y && it.answered
		no = no || n
		hostOpt = hostOpt || h
		keyHint = keyHint || endsWithKeyHint(label)
	}
	cursor := sel > 0 && (sel < opts || opts == 1)
	// A menu asks (a question), is being answered (a cursor), was
	// answered, or names the keys that answer it ("(esc)", "(y)"): a list
	// of options alone is documentation.
	if !yes && !hostOpt || !q && !cursor && !yesAnswered && !keyHint {
		return 0, nil
	}
	if yes {
		score++
	}
	if yesNum && cursor {
		score += 2
	}
	if yesAnswered {
		score++
	}
	if no {
		score++
	}
	if q {
		score++
	}
	if qVerb {
		score++
	}
	if hostOpt {
		score += 2
	}
	marks := 0
	for _, m := range hostMarks {
		if bytes.Contains(d.low, []byte(m)) {
			if marks++; marks == 2 {
				break
			}
		}
	}
	return score + marks, quote
}

// segment cuts the window into items: lines, and within a line the parts a
// menu drawn on one line is made of (selection glyphs, box borders, HTML
// tags, " | " separators, [buttons], inline "2. " markers).
func (d *dialogScratch) segment() {
	l := d.low
	start := 0
	// No cap on the items: a window is at most a few kilobytes, and a cap
	// would let padding push the options out of it.
	for start <= len(l) {
		end := bytes.IndexByte(l[start:], '\n')
		if end < 0 {
			end = len(l)
		} else {
			end += start
		}
		d.line(start, end)
		start = end + 1
	}
}

// line cuts l[a:b] into segments and adds each as an item. A segment next
// to a separator (" | ", an HTML tag, a [button]) is an option of a menu
// drawn on one line.
func (d *dialogScratch) line(a, b int) {
	l := d.low
	s, prevSep := a, false
	cut := func(i, next int, sep bool) {
		d.add(s, i, prevSep || sep)
		s, prevSep = next, sep
	}
	for i := a; i < b; {
		c := l[i]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(l[i:b])
			switch {
			case isBoxRune(r):
				cut(i, i+n, false)
			case isGlyphRune(r) && hasText(l[s:i]):
				cut(i, i, false)
			}
			i += n
			continue
		case c == '<':
			// An HTML tag: <li>, </p>, <button class="x">.
			if j := bytes.IndexByte(l[i:min(b, i+40)], '>'); j > 0 && isTagStart(l[i+1:]) {
				cut(i, i+j+1, true)
				i += j + 1
				continue
			}
		case c == '|':
			cut(i, i+1, true)
		case c == '"':
			// The strings of JSON written on one line are separate
			// lines of the screen: ["Do you want to proceed?","❯ 1. Yes"].
			if isTerminator(l, i) {
				cut(i, i+1, false)
			}
		case c == '[':
			// A button ("[ Allow once ]") is a segment of its own; a short
			// bracket ("[x]", "[1]", "[Y]") marks what follows.
			if j := bytes.IndexByte(l[i:min(b, i+48)], ']'); j > 4 && bytes.IndexAny(l[i+1:i+j], "[\"") < 0 {
				cut(i, i, true)
				d.add(i+1, i+j, true)
				s = i + j + 1
				i += j + 1
				continue
			} else if j > 0 && hasText(l[s:i]) {
				cut(i, i, false)
			}
		case '1' <= c && c <= '9':
			// An inline option number: "? 1. Yes  2. No", "❯1.Yes 2.No".
			if i > s && i+1 < b && (l[i+1] == '.' || l[i+1] == ')') && isSpace(l[i-1]) &&
				(i+2 == b || l[i+2] == ' ' || isASCIILetter(l[i+2])) && hasText(l[s:i]) {
				cut(i, i, false)
			}
		}
		i++
	}
	d.add(s, b, prevSep)
}

// add parses one segment: its markers, then its label.
func (d *dialogScratch) add(a, b int, sep bool) {
	if a >= b {
		return
	}
	l := d.low
	it := dialogItem{marked: sep}
	it.question = hasQuestionMark(l[a:b])
	// Markers, in any order: spaces, markdown, glyphs, bullets,
	// checkboxes, numbers.
	for a < b {
		c := l[a]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '*' || c == '_' || c == '`' || c == '#':
			a++
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(l[a:b])
			switch {
			case isSelectRune(r):
				it.selected, it.marked = true, true
				it.answered = it.answered || isAnsweredRune(r)
			case isGlyphRune(r):
				it.marked = true
			case isBoxRune(r):
			default:
				goto label
			}
			a += n
			continue
		case c == '>' && a+1 < b && (l[a+1] == ' ' || '1' <= l[a+1] && l[a+1] <= '9'):
			it.selected, it.marked = true, true
			a++
			continue
		case (c == '-' || c == '+') && a+1 < b && l[a+1] == ' ':
			it.marked = true
			a += 2
			continue
		case c == '[' || c == '(':
			// "[x]", "[ ]", "(*)", "( )", "[1]", "(2)", "[y]"
			if a+2 < b && l[a+2] == closing(c) {
				switch m := l[a+1]; {
				case m == 'x' || m == '*':
					it.selected, it.marked, it.answered = true, true, m == 'x'
				case m == ' ':
					it.marked = true
				case '1' <= m && m <= '9' || isASCIILetter(m):
					it.numbered, it.marked = true, true
				default:
					goto label
				}
				a += 3
				continue
			}
		case '1' <= c && c <= '9' || isASCIILetter(c):
			// "1.", "2)", "3:", "a)", "y -", "1 -"
			if n := optionNumber(l[a:b]); n > 0 {
				it.numbered, it.marked = true, true
				a += n
				continue
			}
		}
		break
	}
label:
	for a < b && (l[a] == ' ' || l[a] == '*' || l[a] == '`' || l[a] == '_') {
		a++
	}
	// Trailing decoration and answered marks.
	for b > a {
		r, n := utf8.DecodeLastRune(l[a:b])
		switch {
		case r == ' ' || r == '\t' || r == '\r' || r == '*' || r == '`' || r == '_' || isBoxRune(r):
		case isAnsweredRune(r) || r == '\u2190':
			it.selected, it.answered = true, true
		default:
			goto done
		}
		b -= n
	}
done:
	if bytes.HasSuffix(l[a:b], []byte("selected")) && !bytes.HasSuffix(l[a:b], []byte("unselected")) {
		it.selected, it.answered = true, true
	}
	if a >= b {
		return
	}
	it.a, it.b = a, b
	d.items = append(d.items, it)
}

// unicodeSpace returns the length of the Unicode space at the start of b
// (a character fold.go reads as a space), or 0. It is foldRawAt, which
// matches byte patterns rather than decoding, narrowed to the spaces.
func unicodeSpace(b []byte) int {
	if r, n := foldRawAt(b); n > 0 && foldByte(r) == ' ' {
		return n
	}
	return 0
}

// endsWithYes reports a text whose last word is "yes".
func endsWithYes(text []byte) bool {
	t := bytes.TrimRight(text, " \t\r\n*`.")
	if len(t) < 3 || !equalFoldASCII(t[len(t)-3:], []byte("yes")) {
		return false
	}
	return len(t) == 3 || !isASCIILetter(t[len(t)-4])
}

// closing returns the bracket that closes c.
func closing(c byte) byte {
	if c == '(' {
		return ')'
	}
	return ']'
}

// optionNumber returns the length of an option marker at the start of b:
// "1.", "2)", "3:", "1 -" (a digit), or "a)", "y -" (a letter, which needs
// ")" or " -" so that words are not read as markers); 0 if there is none.
func optionNumber(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	digit := '1' <= b[0] && b[0] <= '9'
	if len(b) > 1 && isASCIILetter(b[1]) || '0' <= b[1] && b[1] <= '9' {
		return 0
	}
	switch {
	case b[1] == ')':
		return 2
	case digit && (b[1] == '.' || b[1] == ':'):
		if len(b) > 2 && '0' <= b[2] && b[2] <= '9' {
			return 0 // "3.14"
		}
		return 2
	case b[1] == ' ' && len(b) > 3 && b[2] == '-' && b[3] == ' ':
		return 4
	}
	return 0
}

func isTagStart(b []byte) bool {
	if len(b) > 0 && b[0] == '/' {
		b = b[1:]
	}
	return len(b) > 0 && isASCIILetter(b[0])
}

// hasText reports whether b holds more than spaces, markers and glyphs:
// a segment worth cutting off before the next option.
func hasText(b []byte) bool {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if isASCIILetter(c) || '0' <= c && c <= '9' || c == '?' {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if !isGlyphRune(r) && !isBoxRune(r) {
			return true
		}
		i += n
	}
	return false
}

// hasQuestionMark reports a question mark that ends a question (ASCII or
// full-width), not one inside a URL.
func hasQuestionMark(b []byte) bool {
	return hasQuestion(b) || bytes.Contains(b, []byte("\uff1f"))
}

// isBoxRune reports the box-drawing characters hosts draw dialogs with.
func isBoxRune(r rune) bool { return 0x2500 <= r && r <= 0x257F }

// isSelectRune reports the glyphs hosts mark the current or chosen option
// with.
func isSelectRune(r rune) bool {
	switch r {
	case '❯', '›', '→', '▶', '►', '▸', '●', '◉', '✔', '✓', '☑', '⏵', '⮕', '➜', '»':
		return true
	}
	return false
}

// isAnsweredRune reports the glyphs hosts mark a chosen answer with.
func isAnsweredRune(r rune) bool { return r == '✔' || r == '✓' || r == '☑' }

// isGlyphRune reports option glyphs: the selection glyphs and the hollow
// radio buttons, checkboxes and bullets of the other options.
func isGlyphRune(r rune) bool {
	if isSelectRune(r) {
		return true
	}
	switch r {
	case '○', '◯', '☐', '•', '◦', '▫', '□':
		return true
	}
	return false
}

var (
	// yesWords open an option that consents, in the hosts' languages.
	yesWords = []string{"yes", "oui", "ja", "si", "sí", "sì", "sim", "tak", "да", "是", "はい", "예", "네",
		"allow", "approve", "accept", "always", "proceed", "continue", "run", "erlauben", "permitir", "autoriser"}
	// noWords open an option that refuses.
	noWords = []string{"no", "non", "nein", "nee", "não", "nao", "nie", "нет", "否", "いいえ", "아니요", "아니오",
		"deny", "reject", "decline", "cancel", "skip", "don't", "dont", "don’t", "block", "abort"}
	// answeredWords open an option already chosen ("approved", "you
	// allowed ...").
	answeredWords = []string{"approved", "allowed", "accepted", "chose", "selected"}
	// requestPhrases make a line a request for permission.
	requestPhrases = []string{"wants to", "would like to", "needs your approval", "needs approval",
		"needs permission", "requests permission", "is requesting", "asks to", "is asking"}
	// verbOptionWords open options whose wording goes on ("Allow for
	// this session", "Always allow", "Don't allow", "Accept all").
	verbOptionWords = []string{"allow", "always", "approve", "accept", "deny", "reject", "don't", "dont",
		"don’t", "cancel", "skip", "block", "decline", "abort", "continue", "proceed", "run",
		"erlauben", "permitir", "autoriser"}
	// conditionWords open a clause that describes rather than asks.
	conditionWords = []string{"when", "if", "once", "after", "before", "whenever", "until", "unless", "while"}
	// hostOptionWords are the hosts' own option wording.
	hostOptionWords = []string{"ask again", "always allow", "allow always", "allow once", "this session",
		"the session", "for session", "this turn", "this project", "this workspace", "differently",
		"suggest changes", "tell claude", "tell codex", "tell gemini", "(esc)", "external editor",
		"auto-accept", "keep planning", "just this once", "this time", "for this command",
		"for these files", "commands in", "always for", ", always"}
	// hostMarks are the hosts' other marks around a dialog.
	hostMarks = []string{"claude", "codex", "gemini", "copilot", "cursor", "cline", "aider", "(esc)",
		"esc to cancel", "shift+tab", "press enter to confirm", "bash command", "tool use", "(mcp)",
		"mcp tool", "mcp server", "tool call", "don't ask again", "don\u2019t ask again", "do not ask again",
		"allow once", "always allow", "allow always", "suggest changes", "what to do differently"}
	// dialogVerbs make a question a request for permission.
	dialogVerbs = []string{"proceed", "continu", "run", "execut", "allow", "approv", "apply", "edit",
		"creat", "write", "fetch", "trust", "grant", "permi", "delete", "install", "autori", "erlaub",
		"ausführ", "fortfahr", "procede", "procéd", "ejecut", "doorgaan", "uitvoer"}
)

// firstWord returns the first word of label, without the punctuation
// after it ("yes," → "yes").
func firstWord(label []byte) []byte {
	i := 0
	for i < len(label) {
		c := label[i]
		if c == ' ' || c == ',' || c == '.' || c == ':' || c == '(' || c == ')' || c == '!' || c == ';' || c == '/' || c == '\t' || c == '"' {
			break
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(label[i:])
			if r == '，' || r == '、' || r == '。' {
				break
			}
			i += n
			continue
		}
		i++
	}
	for i > 0 && (label[i-1] == '*' || label[i-1] == '`' || label[i-1] == '_') {
		i--
	}
	return label[:i]
}

func inWords(w []byte, set []string) bool {
	for _, s := range set {
		if string(w) == s {
			return true
		}
	}
	return false
}

// yesLike reports an option that consents: "Yes, proceed", "Allow once",
// or an answer already given ("You approved codex to run ...").
func yesLike(label []byte) bool {
	w := firstWord(label)
	if string(w) == "you" && len(w) < len(label) {
		return inWords(firstWord(label[len(w)+1:]), answeredWords)
	}
	return inWords(w, answeredWords) || inWords(w, yesWords) && optionShaped(label, w)
}

// noLike reports an option that refuses: "No", "No, and tell Codex ...",
// "Deny", "Don't allow".
func noLike(label []byte) bool {
	w := firstWord(label)
	return inWords(w, noWords) && optionShaped(label, w)
}

// optionShaped reports whether label, which starts with the word w, reads
// as the label of an option rather than a sentence that starts with the
// same word: "Yes", "Yes, and don't ask again", "Yes (y)", "Allow once"
// are options; "Yes runs the command once" and "No blockers remain" are
// the prose of documentation and mail.
func optionShaped(label, w []byte) bool {
	if inWords(w, verbOptionWords) {
		return len(label) <= 64
	}
	rest := label[len(w):]
	for len(rest) > 0 && (rest[0] == '*' || rest[0] == '`' || rest[0] == '_') {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return true
	}
	switch rest[0] {
	case ',', '!', '(', '.', ';':
		return true
	}
	if r, _ := utf8.DecodeRune(rest); r == '，' || r == '、' || r == '。' {
		return true
	}
	rest = bytes.TrimLeft(rest, " \t")
	if len(rest) == 0 || rest[0] == '(' || rest[0] == '[' {
		return true
	}
	r, _ := utf8.DecodeRune(rest)
	return r == '←' || isAnsweredRune(r)
}

// endsWithKeyHint reports an option label that ends with the key that
// chooses it: "Yes, proceed (y)", "No, suggest changes (esc)", "Yes,
// allow all edits during this session (shift+tab)".
func endsWithKeyHint(label []byte) bool {
	if len(label) < 3 || label[len(label)-1] != ')' {
		return false
	}
	i := bytes.LastIndexByte(label, '(')
	if i < 0 || len(label)-i-2 > 9 || i == len(label)-2 {
		return false
	}
	for _, c := range label[i+1 : len(label)-1] {
		if !isASCIILetter(c) && c != '+' && c != '-' {
			return false
		}
	}
	return true
}

// isRequestLine reports a line in which a host asks in its own name:
// "Claude wants to run: rm -rf ./tmp", "Cursor needs your approval to
// run:". It counts as the dialog's question.
func isRequestLine(label []byte) bool {
	if len(label) == 0 || label[len(label)-1] != ':' {
		return false
	}
	// The phrase follows the subject closely: "When Claude wants to run
	// a command, you are asked:" is documentation.
	head := label[:min(len(label), 40)]
	return hasAny(head, requestPhrases) && !inWords(firstWord(label), conditionWords)
}

func startsWord(label []byte, w string) bool { return string(firstWord(label)) == w }

func hasAny(b []byte, set []string) bool {
	for _, s := range set {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// hasDialogVerb reports a word of the question that starts with one of
// dialogVerbs.
func hasDialogVerb(q []byte) bool {
	for _, v := range dialogVerbs {
		for from := 0; ; {
			j := bytes.Index(q[from:], []byte(v))
			if j < 0 {
				break
			}
			j += from
			if j == 0 || !isASCIILetter(q[j-1]) {
				return true
			}
			from = j + 1
		}
	}
	return false
}
