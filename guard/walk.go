package guard

import (
	"bytes"
	"strconv"
	"strings"
)

type span struct {
	a, b int  // content of a JSON string, quotes excluded; b == 0 means unset
	esc  bool // the content holds escapes
}

const (
	stObjKey   uint8 = iota // after '{' or ',': a key or '}'
	stObjColon              // after a key
	stObjValue              // after ':'
	stObjComma              // after a member: ',' or '}'
	stArrValue              // after '[' or ',': a value or ']'
	stArrComma              // after an element: ',' or ']'
)

type frame struct {
	obj   bool
	state uint8
	meta  bool // inside a _meta object, at any depth
	start int

	// How this frame hangs off its parent.
	key   span     // the parent object's key, or unset
	pkc   keyClass // that key's class
	index int      // the position in the parent array, when key is unset

	cur   span     // the current member's key (objects)
	curKC keyClass // and its class
	n     int      // members or elements seen so far

	feat  objFeat
	slots [nSlots]span
}

// walker reads one buffer of JSON, or of text that may contain JSON, with a
// lenient, non-recursive parser: it classifies every object it can read,
// reads the strings that carry a stem, and steps over anything else. It keeps
// an explicit stack bounded by maxDepth, so no input can exhaust the
// goroutine stack, and it never reads a byte more than a bounded number of
// times, so its time is linear in the input.
type walker struct {
	in    *inspector
	data  []byte
	level int
	ss    stringScanner
	hits  hitCursor
	escs  escCursor
	folds foldCursor
	stack []frame

	parent *walker // for level > 0: the walker paused on the string this text came from
	// proseDone says the level above read this whole text as prose, so
	// an unescaped string in it needs no second reading.
	proseDone bool
	base      string // cached path of this text
	baseDone  bool
	baseMeta  bool

	// budget bounds re-reading after a syntax error (see fail).
	budget int
	// lastStr is the content of the last string read, for fail.
	lastStr span
	// judged remembers objects already reported, by start offset, so that
	// re-reading after an error does not report them twice.
	judged map[int]bool
	// nextOpenPos caches the next '{' and '[' for text mode.
	nextBrace, nextBracket, openFrom int
}

func newWalker(in *inspector, data []byte, level int, parent *walker, meta bool) *walker {
	return &walker{
		in: in, data: data, level: level,
		ss:       newStringScanner(data),
		hits:     newHitCursor(data),
		escs:     newEscFoldCursor(data),
		folds:    newFoldCursor(data),
		parent:   parent,
		baseMeta: meta,
		budget:   4*len(data) + 4096,
		openFrom: -1,
	}
}

// run walks the whole buffer.
func (w *walker) run() {
	d := w.data
	i := 0
	for i < len(d) && !w.in.full() {
		if len(w.stack) == 0 {
			j := w.nextOpen(i)
			if j < 0 {
				return
			}
			w.push(j, d[j] == '{')
			i = j + 1
			continue
		}
		c := d[i]
		if isSpace(c) {
			i++
			continue
		}
		// A lenient reader, like a model, reads a Unicode space between
		// tokens as a space (JSON embedded in text that was folded but
		// kept its line separators; see fold.go).
		if c >= 0x80 {
			if n := unicodeSpace(d[i:]); n > 0 {
				i += n
				continue
			}
		}
		if w.in.overBudget() {
			w.in.add(KindInspectionLimit, w.curPath(), "more JSON than the detector reads ("+strconv.Itoa(maxTokens)+" tokens); not inspected further")
			w.in.stopped = true
			return
		}
		f := &w.stack[len(w.stack)-1]
		switch f.state {
		case stObjKey:
			switch c {
			case '"':
				end, esc, ok := w.ss.end(i + 1)
				if !ok {
					i = w.fail(i)
					continue
				}
				w.lastStr = span{i + 1, end, esc}
				w.onKey(f, w.lastStr)
				f.state = stObjColon
				i = end + 1
			case '}': // also accepts a trailing comma, as lenient readers do
				i = w.pop(i)
			default:
				i = w.fail(i)
			}
		case stObjColon:
			if c != ':' {
				i = w.fail(i)
				continue
			}
			f.state = stObjValue
			i++
		case stObjComma:
			switch c {
			case ',':
				f.state = stObjKey
				i++
			case '}':
				i = w.pop(i)
			default:
				i = w.fail(i)
			}
		case stArrComma:
			switch c {
			case ',':
				f.state = stArrValue
				i++
			case ']':
				i = w.pop(i)
			default:
				i = w.fail(i)
			}
		case stArrValue:
			if c == ']' {
				i = w.pop(i)
				continue
			}
			i = w.value(i)
		case stObjValue:
			i = w.value(i)
		}
	}
	if len(w.stack) > 0 && !w.in.full() {
		w.fail(len(d))
	}
}

// nextOpen returns the next '{' or '[' at or after i, or -1.
func (w *walker) nextOpen(i int) int {
	if w.openFrom < 0 || i < w.openFrom {
		w.nextBrace, w.nextBracket = -2, -2
	}
	w.openFrom = i
	if w.nextBrace != -1 && w.nextBrace < i {
		w.nextBrace = indexFrom(w.data, i, '{')
	}
	if w.nextBracket != -1 && w.nextBracket < i {
		w.nextBracket = indexFrom(w.data, i, '[')
	}
	switch {
	case w.nextBrace < 0:
		return w.nextBracket
	case w.nextBracket < 0 || w.nextBrace < w.nextBracket:
		return w.nextBrace
	default:
		return w.nextBracket
	}
}

func indexFrom(d []byte, i int, c byte) int {
	j := bytes.IndexByte(d[i:], c)
	if j < 0 {
		return -1
	}
	return i + j
}

// value reads the value starting at d[i] in the top frame and returns the
// position after it.
func (w *walker) value(i int) int {
	d := w.data
	c := d[i]
	switch {
	case c == '"':
		end, esc, ok := w.ss.end(i + 1)
		if !ok {
			return w.fail(i)
		}
		w.lastStr = span{i + 1, end, esc}
		w.onString(w.lastStr)
		w.afterValue()
		return end + 1
	case c == '{' || c == '[':
		if len(w.stack) >= maxDepth {
			end := skipValue(d, i, &w.ss)
			if w.hits.any(i, end) || w.escs.any(i, end) {
				w.in.add(KindInspectionLimit, w.curPath(), "approval vocabulary nested deeper than "+strconv.Itoa(maxDepth)+" levels; not inspected")
			}
			w.afterValue()
			return end
		}
		w.push(i, c == '{')
		return i + 1
	case c == '-' || '0' <= c && c <= '9':
		j := i + 1
		for j < len(d) && (d[j] >= '0' && d[j] <= '9' || d[j] == '.' || d[j] == 'e' || d[j] == 'E' || d[j] == '+' || d[j] == '-') {
			j++
		}
		w.onScalar(false)
		w.afterValue()
		return j
	case c == 't' && bytes.HasPrefix(d[i:], []byte("true")):
		w.onScalar(true)
		w.afterValue()
		return i + 4
	case c == 'f' && bytes.HasPrefix(d[i:], []byte("false")):
		w.onScalar(false)
		w.afterValue()
		return i + 5
	case c == 'n' && bytes.HasPrefix(d[i:], []byte("null")):
		w.onScalar(false)
		w.afterValue()
		return i + 4
	}
	return w.fail(i)
}

func (w *walker) afterValue() {
	f := &w.stack[len(w.stack)-1]
	f.n++
	if f.obj {
		f.state = stObjComma
	} else {
		f.state = stArrComma
	}
}

func (w *walker) push(i int, obj bool) {
	nf := frame{obj: obj, start: i, index: -1, meta: w.baseMeta}
	if obj {
		nf.state = stObjKey
	} else {
		nf.state = stArrValue
	}
	if len(w.stack) > 0 {
		p := &w.stack[len(w.stack)-1]
		nf.meta = p.meta
		if p.obj {
			nf.key, nf.pkc = p.cur, p.curKC
			if p.curKC&kcMeta != 0 {
				nf.meta = true
			}
		} else {
			nf.index = p.n
		}
	}
	w.stack = append(w.stack, nf)
}

// pop closes the top frame at d[i] and returns i+1.
func (w *walker) pop(i int) int {
	top := len(w.stack) - 1
	f := &w.stack[top]
	rep := childReport(0)
	if f.obj {
		w.judge(top)
		rep = f.report()
	}
	pkc, key, obj := f.pkc, f.key, f.obj
	w.stack = w.stack[:top]
	if top > 0 {
		p := &w.stack[top-1]
		if p.obj {
			p.onChild(pkc, rep, obj, key)
		}
		w.afterValue()
	}
	return i + 1
}

// fail handles a syntax error at d[i]: every open object is judged on the
// members read so far (a truncated or deliberately broken object is still
// read by a model), the stack is dropped, and reading resumes.
//
// Where it resumes matters. A bracket swallowed by a bogus string
// ({"a": "{"decision":...}) is the way to hide an object from a parser
// that a model still reads, so when the last string read holds a bracket,
// reading resumes at that bracket. Otherwise a short failed attempt is
// re-read from just after its opening bracket, within a budget
// proportional to the input; anything else resumes at the error. Every
// restart lies beyond the previous one, so the walk stays linear.
func (w *walker) fail(i int) int {
	for k := len(w.stack) - 1; k >= 0; k-- {
		if w.stack[k].obj {
			w.judge(k)
		}
	}
	s := w.stack[0].start
	w.stack = w.stack[:0]
	if ls := w.lastStr; ls.b != 0 && ls.a > s && ls.b <= i {
		if r := bytes.LastIndexAny(w.data[ls.a:ls.b], "{["); r >= 0 {
			return ls.a + r
		}
	}
	if cost := i - s; cost <= 256 && cost <= w.budget {
		w.budget -= cost
		return s + 1
	}
	if i < len(w.data) && w.data[i] != '{' && w.data[i] != '[' {
		return i + 1
	}
	return i
}

// judge applies the object rules to stack[k].
func (w *walker) judge(k int) {
	f := &w.stack[k]
	v, ok := f.judge(w.in.elicitRoot && w.level == 0 && k == 0)
	if !ok || w.judged[f.start] {
		return
	}
	if w.judged == nil {
		w.judged = map[int]bool{}
	}
	w.judged[f.start] = true
	var sb strings.Builder
	w.framePath(&sb, k+1)
	if s := f.slots[v.slot]; s.b != 0 {
		w.writeKey(&sb, s)
	}
	w.in.add(v.kind, sb.String(), v.detail)
}

// onKey records an object key and reports host-specific markers.
func (w *walker) onKey(f *frame, k span) {
	raw := w.data[k.a:k.b]
	key := raw
	if k.esc {
		w.in.scratch = appendUnescaped(w.in.scratch[:0], raw)
		key = w.in.scratch
	}
	// Every vocabulary fragment holds a stem, so a key without a stem
	// hit (or a hiding escape) cannot be vocabulary: skip those checks.
	kc := classifyKey(key, w.in.norm[:0], w.hits.any(k.a, k.b) || w.escs.any(k.a, k.b))
	f.cur, f.curKC = k, kc
	switch {
	case kc&kcCodexMarker != 0:
		w.in.add(KindHostApprovalMarker, w.keyPath(k), "host approval marker codex_approval_kind")
	case kc&kcXApproval != 0:
		w.in.add(KindHostApprovalMarker, w.keyPath(k), "x-approval key")
	case kc&kcVocab != 0 && (f.meta || namespaced(key)):
		w.in.add(KindHostApprovalMarker, w.keyPath(k), "approval key "+snippet(key, 40)+" in _meta or a namespaced key")
	}
	if w.in.full() {
		return
	}
	w.inspectText(k, true)
}

// namespaced reports a _meta-style key with a reverse-DNS prefix
// ("io.modelcontextprotocol/approval"), as opposed to a path such as
// "/deployments/{id}/approvals".
func namespaced(key []byte) bool {
	p := bytes.IndexByte(key, '/')
	if p <= 0 || bytes.IndexByte(key[:p], '.') < 0 {
		return false
	}
	for _, c := range key[:p] {
		if !('a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// onString handles a string value: it feeds the object rules and reads the
// string's own text.
func (w *walker) onString(v span) {
	f := &w.stack[len(w.stack)-1]
	if f.obj {
		const valueRoles = kcType | kcDecision | kcStrongDecision | kcBehavior | kcAction | kcStatus | kcBoolGrant | kcPendingFlag | kcMethod
		var vc valueClass
		if f.curKC&valueRoles != 0 || f.meta {
			raw := w.data[v.a:v.b]
			if v.esc {
				w.in.scratch = appendUnescaped(w.in.scratch[:0], raw)
				raw = w.in.scratch
			}
			vc = classifyValue(raw, w.in.norm[:0])
		}
		f.onMember(f.curKC, vc, false, f.cur)
		if f.meta && vc&vcVocab != 0 {
			w.in.add(KindHostApprovalMarker, w.curPath(), "approval vocabulary in a _meta value")
		}
	}
	w.inspectText(v, false)
}

func (w *walker) onScalar(isTrue bool) {
	f := &w.stack[len(w.stack)-1]
	if f.obj {
		f.onMember(f.curKC, 0, isTrue, f.cur)
	}
}

// inspectText reads the text of a key or string value that carries a stem:
// as prose, and, when it may hold JSON, as JSON one level down.
func (w *walker) inspectText(s span, isKey bool) {
	// A folded character (a no-break space, a fullwidth letter; see
	// fold.go), raw or escaped, can hide a stem from the raw-byte look:
	// " yes," spelt with U+00A0. escs finds escapes of both kinds.
	hit := w.hits.any(s.a, s.b)
	esc, raw := w.escs.any(s.a, s.b), w.folds.any(s.a, s.b)
	if !hit && !esc && !raw {
		return
	}
	orig := w.data[s.a:s.b]
	if s.esc {
		orig = appendUnescaped(make([]byte, 0, len(orig)), orig)
	}
	// A copy, made only when there is something to fold: the upstream's
	// bytes are never changed. The text read one level down is folded
	// too, but keeps its line separators, so that its strings are read
	// both ways there (fold.go).
	text, down, lineSep := orig, orig, false
	if raw || esc { // else there is nothing to fold
		text = foldText(orig)
		down = text
		if lineSep = len(text) != len(orig) && hasLineSep(orig); lineSep {
			down = foldAs(orig, 0)
		}
	}
	// Without a stem as written, the text may still hold one once
	// unescaped or folded, or hide one a level down; if not, it is done.
	if !hit && !mayHold(text) && !(lineSep && mayHold(foldLines(orig))) {
		return
	}
	// At level 0 every string is new text. Deeper, an unescaped string is
	// a slice of text the level above already read as prose, unless that
	// text was a JSON document: reading a whole document as sentences
	// would run keys and values of different members together, so its
	// strings are read one by one at the next level instead.
	doc := !isKey && s.esc && isJSONDoc(text)
	// A text without whitespace is one token, not a sentence.
	if (w.level == 0 || s.esc || !w.proseDone) && !doc && bytes.IndexAny(text, " \t\n\r") >= 0 {
		w.in.proseReadings(orig, text, w.curPath)
	}
	// A string can hold JSON with keys only if it had escaped quotes.
	if isKey || !s.esc || bytes.IndexByte(text, '"') < 0 || w.in.full() {
		return
	}
	meta := w.baseMeta
	if n := len(w.stack); n > 0 {
		f := &w.stack[n-1]
		meta = f.meta || f.obj && f.curKC&kcMeta != 0
	}
	if w.level+1 > maxLevel {
		if bytes.IndexAny(text, "{[") >= 0 {
			w.in.add(KindInspectionLimit, w.curPath(), "JSON embedded more than "+strconv.Itoa(maxLevel)+" levels deep; not inspected")
		}
		return
	}
	if bytes.IndexAny(text, "{[") < 0 {
		return
	}
	child := newWalker(w.in, down, w.level+1, w, meta)
	child.proseDone = !doc
	child.run()
}

// isJSONDoc reports whether text, trimmed, is bracketed like a JSON
// object or array.
func isJSONDoc(text []byte) bool {
	t := bytes.TrimSpace(text)
	if len(t) < 2 {
		return false
	}
	return t[0] == '{' && t[len(t)-1] == '}' || t[0] == '[' && t[len(t)-1] == ']'
}

// basePath is the path of this walker's text: "" for the result itself,
// the path of the string it came from plus "(json)" deeper down.
func (w *walker) basePath() string {
	if !w.baseDone {
		w.baseDone = true
		if w.parent != nil {
			w.base = w.parent.curPath() + "(json)"
		}
	}
	return w.base
}

// framePath writes the path of stack[depth-1] (the text's base for 0).
func (w *walker) framePath(sb *strings.Builder, depth int) {
	sb.WriteString(w.basePath())
	for k := 1; k < depth; k++ {
		f := &w.stack[k]
		if f.key.b != 0 {
			w.writeKey(sb, f.key)
		} else if f.index >= 0 {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(f.index))
			sb.WriteByte(']')
		}
	}
}

// curPath is the path of the value being read now.
func (w *walker) curPath() string {
	var sb strings.Builder
	w.framePath(&sb, len(w.stack))
	if n := len(w.stack); n > 0 {
		f := &w.stack[n-1]
		if f.obj {
			if f.cur.b != 0 {
				w.writeKey(&sb, f.cur)
			}
		} else {
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(f.n))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func (w *walker) keyPath(k span) string {
	var sb strings.Builder
	w.framePath(&sb, len(w.stack))
	w.writeKey(&sb, k)
	return sb.String()
}

func (w *walker) writeKey(sb *strings.Builder, k span) {
	key := w.data[k.a:k.b]
	if k.esc {
		key = appendUnescaped(nil, key)
	}
	pathKey(sb, key)
}

// skipValue returns the position after the JSON value at d[i] without
// looking inside it; it counts brackets iteratively and honours strings.
func skipValue(d []byte, i int, ss *stringScanner) int {
	depth := 0
	for i < len(d) {
		switch d[i] {
		case '"':
			end, _, ok := ss.end(i + 1)
			if !ok {
				return len(d)
			}
			i = end + 1
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1
			}
		}
		i++
	}
	return len(d)
}
