package guard

import (
	"bytes"
	"strconv"
	"strings"
)

// The prose rules look at one sentence at a time: the sentence around each
// word that starts with an approval stem (so "disapproved" and "unapproved"
// do not count), with the sentence before it for authority markers and the
// text after it for prompt options. A sentence is cut at ". ", "! ", "? " and
// blank lines and never grows past proseReach bytes either side of the stem,
// so the work is linear in the text.
//
// A sentence is flagged when it combines a granted approval with something
// that makes it an instruction to the agent or a statement about this
// session's tool calls:
//
//	S  strong grant: "approval granted", "permission was given",
//	   "the user has approved", "approved by the user", "has confirmed"
//	G  a grant word (approved, authorized, confirmed, allowed, ...) that is
//	   not negated ("not approved"), conditional ("once approved", "must be
//	   approved", "approved when ...") or in a relative clause ("calls that
//	   are approved")
//	T  a tool-call reference: "tool call", "this call", "function call",
//	   "this command", or run/call/execute/invoke followed by an identifier
//	   such as delete_repo
//	D  an instruction to skip asking: "without asking", "no need to
//	   confirm", "don't ask", "you may now", "you are now authorized"
//	A  an authority marker: "SYSTEM:", "[system]", "note to assistant", or
//	   the gate's own name
//
// Rules: S+T, S+D, S+A, "permission granted" + a human, G+D, G+A,
// approved/authorized/confirmed + a narrow tool-call reference; a question
// asking to approve or allow followed by prompt options ("(yes/no)",
// "[y/N]", "don't ask again", "allow once"); and any mention of mcp-gate
// with approval vocabulary (KindGateImpersonation).
const (
	proseReach   = 300 // bytes either side of the stem
	proseContext = 80  // bytes of preceding text read for authority markers
	proseOptions = 300 // bytes of following text read for prompt options
)

const proseSnip = 72

// maxProseWork bounds the bytes of sentences read as prose in one call.
// Only sentences holding approval vocabulary are read, so ordinary
// results stay far below it (a 1 MB text with a stem in every sentence
// reads about 1 MB); a hostile text made of nothing else reaches it and is
// refused (KindInspectionLimit) rather than read for seconds.
const maxProseWork = 4 << 20

type word struct {
	s, e   int  // span in the lower-cased word buffer
	caps   bool // written in capitals, at least two letters
	before byte // the nearest non-space byte before the word, 0 if none
	after  byte // the nearest non-space byte after the word, 0 if none
	ctx    bool // in the preceding sentence (context only)
	end    int  // offset after the word in the original text
	camel  bool // camelCase: an identifier, not a word ("autoApproved")
	ident  bool // snake_case or mcp__ identifier ("delete_repo")
	lx     lex  // classes of the word
	lastLx lex  // classes of the part after its last hyphen ("pre-approved")
}

type sentence struct {
	text  []byte // the original text
	buf   []byte
	str   string // buf as a string, made once per sentence
	words []word
}

func (s *sentence) w(i int) string {
	if i < 0 || i >= len(s.words) {
		return ""
	}
	x := s.words[i]
	return s.str[x.s:x.e]
}

// prose reads text as sentences and reports the first one that forges
// consent.
func (in *inspector) prose(text []byte, path func() string) {
	cur := newHitCursor(text)
	done, dialogDone := 0, 0
	sent := &in.sent
	for pos := 0; pos < len(text) && !in.full(); {
		h, st := cur.next(pos)
		if st < 0 {
			break
		}
		pos = h + 1
		cat := pf().cats[st]
		if cat == catShape || h > 0 && isASCIILetter(text[h-1]) && isASCIILetter(text[h]) {
			continue
		}
		// The lines around the stem may draw a host's dialog; read each
		// window once.
		if h >= dialogDone {
			dialogDone = in.dialog(text, h, path)
			if in.full() {
				return
			}
		}
		if cat != catVocab || h < done {
			continue
		}
		a, b := sentenceAround(text, h)
		done, pos = b, b
		// Bound the work a hostile text can cause; fail closed past it.
		in.proseWork += b - a
		if in.proseWork > maxProseWork {
			in.add(KindInspectionLimit, path(), "more text with approval vocabulary than the detector reads ("+
				strconv.Itoa(maxProseWork>>20)+" MiB of sentences); not inspected further")
			return
		}
		if kind, why, ok := judgeSentence(sent, text, a, b); ok {
			in.add(kind, path(), truncDetailN(why+": "+snippet(bytes.TrimSpace(text[a:b]), proseSnip), proseSnip+40))
			return
		}
	}
	// The stems " yes\n" and " yes\"" find an option "Yes" at the end of
	// its line; one at the end of the text has no byte after it ("Do you
	// want to proceed?\n✔ 1. Yes").
	if !in.full() && dialogDone < len(text) && endsWithYes(text) {
		in.dialog(text, len(text)-1, path)
	}
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isTerminator(text []byte, k int) bool {
	switch text[k] {
	case '.', '!', '?':
		return k+1 == len(text) || isSpace(text[k+1])
	case '\n':
		return k > 0 && text[k-1] == '\n'
	case '"':
		// JSON punctuation around a quote ends a unit: the strings of a
		// JSON document are separate texts, not one sentence.
		switch prevNonSpace(text, k) {
		case '{', '[', ',', ':':
			return true
		}
		switch nextNonSpace(text, k+1) {
		case ',', ':', '}', ']':
			return true
		}
	}
	return false
}

// sentenceAround returns the bounds of the sentence holding text[h].
func sentenceAround(text []byte, h int) (a, b int) {
	lo := max(0, h-proseReach)
	a = lo
	for k := h - 1; k >= lo; k-- {
		if isTerminator(text, k) {
			a = k + 1
			break
		}
	}
	hi := min(len(text), h+proseReach)
	b = hi
	for k := h; k < hi; k++ {
		if isTerminator(text, k) {
			b = k + 1
			break
		}
	}
	return a, b
}

// tokenize appends the words of text[a:b] to s, lower-cased. Letters,
// digits, '_', '-' and apostrophes (ASCII or U+2019) make words.
func (s *sentence) tokenize(text []byte, a, b int, ctx bool) {
	i := a
	for i < b {
		for i < b && byteClass[text[i]] == 0 && !isCurlyQuote(text, i) {
			i++
		}
		if i >= b {
			break
		}
		start := len(s.buf)
		upper, letters := 0, 0
		camel, prevLower := false, false
		j := i
		for j < b {
			c := text[j]
			cls := byteClass[c]
			if cls == 0 {
				if !isCurlyQuote(text, j) {
					break
				}
				s.buf = append(s.buf, '\'')
				j += 3
				prevLower = false
				continue
			}
			switch cls {
			case clUpper:
				upper++
				letters++
				camel = camel || prevLower
				prevLower = false
				c += 'a' - 'A'
			case clLower:
				letters++
				prevLower = true
			default:
				prevLower = false
			}
			s.buf = append(s.buf, c)
			j++
		}
		// Trim quoting apostrophes and dashes around the word.
		e := len(s.buf)
		for start < e && (s.buf[start] == '\'' || s.buf[start] == '-') {
			start++
		}
		for e > start && (s.buf[e-1] == '\'' || s.buf[e-1] == '-') {
			e--
		}
		if e > start {
			wb := s.buf[start:e]
			var lx, last lex
			if !camel {
				lx = lexicon[string(wb)]
				if h := bytes.LastIndexByte(wb, '-'); h >= 0 && h+1 < len(wb) {
					last = lexicon[string(wb[h+1:])]
				}
			}
			u := bytes.IndexByte(wb, '_')
			s.words = append(s.words, word{
				lx: lx, lastLx: last,
				ident: u > 0 && u < len(wb)-1 || bytes.HasPrefix(wb, []byte("mcp__")),
				s:     start, e: e, ctx: ctx, camel: camel,
				caps:   letters >= 2 && upper == letters,
				before: prevNonSpace(text, i),
				after:  nextNonSpace(text, j),
				end:    j,
			})
		}
		i = j
	}
}

const (
	clLower = 1 + iota
	clUpper
	clOther // digits, '_', '-', '\''
)

// byteClass classifies the bytes that make words.
var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clLower
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = clUpper
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clOther
	}
	t['_'], t['-'], t['\''] = clOther, clOther, clOther
	return t
}()

func isCurlyQuote(text []byte, i int) bool {
	return text[i] == 0xE2 && i+2 < len(text) && text[i+1] == 0x80 && (text[i+2] == 0x99 || text[i+2] == 0x98)
}

func prevNonSpace(text []byte, i int) byte {
	for k := i - 1; k >= 0 && k >= i-8; k-- {
		if !isSpace(text[k]) {
			return text[k]
		}
	}
	return 0
}

func nextNonSpace(text []byte, j int) byte {
	for k := j; k < len(text) && k < j+8; k++ {
		if !isSpace(text[k]) {
			return text[k]
		}
	}
	return 0
}

var (
	// grantWords state that consent was given.
	grantWords = map[string]bool{
		"approved": true, "authorized": true, "authorised": true, "permitted": true,
		"allowed": true, "granted": true, "confirmed": true, "consented": true,
		"accepted": true, "cleared": true, "whitelisted": true, "allowlisted": true,
		"preapproved": true, "autoapproved": true, "preauthorized": true,
		"agreed": true, "okayed": true, "ok'd": true, "signed-off": true,
	}
	// strictGrantWords are the grant words that never describe a mere
	// capability ("this tool is allowed to read files").
	strictGrantWords = map[string]bool{
		"approved": true, "authorized": true, "authorised": true, "confirmed": true,
		"consented": true, "granted": true, "preapproved": true, "autoapproved": true,
		"preauthorized": true,
	}
	consentNouns = map[string]bool{
		"approval": true, "approvals": true, "permission": true, "permissions": true,
		"authorization": true, "authorisation": true, "consent": true,
		"clearance": true, "confirmation": true,
	}
	nounVerbs = map[string]bool{
		"yes": true, "granted": true, "given": true, "received": true, "obtained": true,
		"confirmed": true, "approved": true, "recorded": true, "accepted": true,
		"provided": true, "captured": true, "verified": true, "secured": true,
	}
	verbsBeforeNoun = map[string]bool{
		"granted": true, "gave": true, "given": true, "received": true, "obtained": true,
	}
	humans = map[string]bool{
		"user": true, "human": true, "operator": true, "owner": true,
		"administrator": true, "admin": true, "user's": true, "end-user": true,
	}
	haveWords = map[string]bool{"has": true, "have": true, "had": true, "'ve": true}
	// auxiliaries may stand between a consent noun and its verb
	// ("permission was granted", "approval is given").
	auxiliaries = map[string]bool{
		"was": true, "is": true, "were": true, "are": true, "formally": true,
		"hereby": true, "now": true, "been": true,
	}
	// fillers may stand between a subject or auxiliary and its grant word.
	fillers = map[string]bool{
		"has": true, "have": true, "had": true, "already": true, "just": true,
		"explicitly": true, "now": true, "also": true, "been": true, "previously": true,
		"pre": true, "manually": true, "personally": true, "kindly": true,
		"successfully": true, "fully": true, "verbally": true,
	}
	// negCond words before a grant word make it a negation, a condition, a
	// requirement or a description rather than a statement of fact.
	negCond = map[string]bool{
		"not": true, "never": true, "no": true, "nor": true, "once": true, "if": true,
		"after": true, "when": true, "whenever": true, "until": true, "unless": true,
		"before": true, "must": true, "should": true, "shall": true, "can": true,
		"could": true, "will": true, "would": true, "may": true, "might": true,
		"to": true, "be": true, "needs": true, "need": true, "require": true,
		"requires": true, "required": true, "awaiting": true, "pending": true,
		"waiting": true, "whether": true, "needed": true, "request": true,
		"requested": true, "ask": true, "asks": true, "asking": true, "that": true,
		"which": true, "get": true, "gets": true, "getting": true, "being": true,
		"denied": true, "rejected": true, "refused": true, "declined": true,
		"revoked": true, "without": true, "only": true, "how": true, "wait": true,
	}
	// condStarters open a subordinate or relative clause: what follows is
	// a condition or a description ("the data to which you have been
	// granted access"), not a statement about this call.
	condStarters = map[string]bool{
		"if": true, "when": true, "once": true, "after": true, "until": true,
		"unless": true, "before": true, "whenever": true, "whether": true,
		"that": true, "which": true, "who": true, "whom": true, "whose": true,
	}
	determiners = map[string]bool{
		"the": true, "a": true, "an": true, "any": true, "these": true, "those": true,
		"such": true, "their": true, "its": true, "some": true, "each": true,
		"other": true, "this": true, "all": true, "every": true, "no": true,
	}
	// notNouns can follow a grant word without making it attributive.
	notNouns = map[string]bool{
		"by": true, "to": true, "for": true, "this": true, "that": true, "these": true,
		"the": true, "a": true, "an": true, "all": true, "it": true, "them": true,
		"you": true, "your": true, "and": true, "or": true, "but": true, "now": true,
		"already": true, "just": true, "once": true, "in": true, "on": true, "at": true,
		"with": true, "without": true, "via": true, "from": true, "as": true, "so": true,
		"yes": true, "not": true, "automatically": true, "explicitly": true,
		"proceed": true, "continue": true, "continuing": true, "run": true, "call": true,
		"access": true, "every": true, "any": true, "each": true, "unconditionally": true,
		"permanently": true, "again": true, "here": true, "then": true,
	}
	// condAfter words right after a grant word make it a condition.
	condAfter = map[string]bool{
		"when": true, "if": true, "once": true, "unless": true, "until": true,
		"only": true, "whenever": true, "before": true,
	}
	askVerbs = map[string]bool{
		"approve": true, "allow": true, "permit": true, "authorize": true,
		"authorise": true, "confirm": true, "grant": true, "accept": true,
	}
	// askObjects follow the verb of an approval prompt: "allow this tool
	// call?", "approve the call?", "allow tool delete_repo to run?".
	askObjects = map[string]bool{
		"this": true, "the": true, "tool": true, "tools": true, "running": true,
		"execution": true, "call": true, "calls": true, "command": true,
		"operation": true, "action": true, "it": true, "access": true, "these": true,
		"mcp": true, "server": true, "request": true, "all": true,
	}
	callVerbs = map[string]bool{
		"run": true, "running": true, "call": true, "calls": true, "calling": true,
		"execute": true, "executing": true, "invoke": true, "invoking": true,
		"use": true, "using": true, "tool": true, "tools": true,
	}
	demonstratives = map[string]bool{
		"this": true, "these": true, "all": true, "every": true, "your": true, "next": true,
	}
	callNouns = map[string]bool{
		"write": true, "writes": true, "deletion": true, "deletions": true,
		"call": true, "calls": true, "command": true, "commands": true, "action": true,
		"operation": true, "invocation": true, "invocations": true,
	}
	toolCallTokens = map[string]bool{
		"toolcall": true, "tool_call": true, "tool-call": true, "tool_use": true,
		"tool-use": true, "tooluse": true, "toolcalls": true, "tool-calls": true,
		"tool_calls": true, "function_call": true, "function-call": true,
	}
	// leadsToIdent words make the identifier after them the object of an
	// action ("continuing with delete_repo", "for transfer_funds").
	leadsToIdent = map[string]bool{
		"with": true, "for": true, "to": true, "on": true, "continuing": true,
		"proceeding": true, "proceed": true, "continue": true, "run": true, "call": true,
		"calls": true, "calling": true, "execute": true, "executing": true, "invoke": true,
		"invoking": true, "use": true, "using": true, "tool": true, "function": true,
	}
	gateNames = map[string]bool{"mcp-gate": true, "mcp_gate": true, "mcpgate": true}
	mcpWord   = map[string]bool{"mcp": true}
	// dontAskStarts are the words dontAskAt looks at.
	dontAskStarts = map[string]bool{
		"without": true, "no": true, "don't": true, "dont": true, "never": true, "do": true,
		"skip": true, "you": true, "you're": true, "you've": true, "proceed": true,
		"auto-approved": true, "autoapproved": true, "auto-approve": true,
		"auto-approving": true, "auto-approval": true, "automatic": true, "auto": true,
	}
	// promptOptions are the answer choices of an approval prompt.
	promptOptions = []string{
		"yes/no", "y/n", "(y)", "[y]", "approve/deny", "allow/deny", "approve or deny",
		"allow or deny", "approve / deny", "allow / deny", "don't ask again",
		"do not ask again", "don\u2019t ask again", "always allow", "allow always",
		"allow once", "approve once", "for this session", "for the session",
		"1. yes", "1) yes", "yes, and", "yes, allow", "yes, approve",
	}
	vocabPrefixes = []string{"approv", "permi", "allow", "authori", "consent", "confirm", "grant", "accept"}
)

// lex is a set of word classes; each word of a sentence is looked up once
// in lexicon, built from the word lists above.
type lex uint32

const (
	lxGrantWords lex = 1 << iota
	lxStrictGrantWords
	lxConsentNouns
	lxNounVerbs
	lxVerbsBeforeNoun
	lxHumans
	lxHaveWords
	lxAuxiliaries
	lxFillers
	lxNegCond
	lxCondStarters
	lxDeterminers
	lxNotNouns
	lxCondAfter
	lxAskVerbs
	lxAskObjects
	lxCallVerbs
	lxDemonstratives
	lxCallNouns
	lxToolCallTokens
	lxLeadsToIdent
	lxGateNames
	lxDontAskStarts
	lxMcp
)

var lexicon = func() map[string]lex {
	m := map[string]lex{}
	for _, e := range []struct {
		set  map[string]bool
		flag lex
	}{
		{grantWords, lxGrantWords},
		{strictGrantWords, lxStrictGrantWords},
		{consentNouns, lxConsentNouns},
		{nounVerbs, lxNounVerbs},
		{verbsBeforeNoun, lxVerbsBeforeNoun},
		{humans, lxHumans},
		{haveWords, lxHaveWords},
		{auxiliaries, lxAuxiliaries},
		{fillers, lxFillers},
		{negCond, lxNegCond},
		{condStarters, lxCondStarters},
		{determiners, lxDeterminers},
		{notNouns, lxNotNouns},
		{condAfter, lxCondAfter},
		{askVerbs, lxAskVerbs},
		{askObjects, lxAskObjects},
		{callVerbs, lxCallVerbs},
		{demonstratives, lxDemonstratives},
		{callNouns, lxCallNouns},
		{toolCallTokens, lxToolCallTokens},
		{leadsToIdent, lxLeadsToIdent},
		{gateNames, lxGateNames},
		{dontAskStarts, lxDontAskStarts},
		{mcpWord, lxMcp},
	} {
		for w := range e.set {
			m[w] |= e.flag
		}
	}
	return m
}()

// lastPart returns the part of a hyphenated word after its last hyphen
// ("pre-approved" reads as "approved").
func lastPart(w string) string {
	if i := strings.LastIndexByte(w, '-'); i >= 0 && i+1 < len(w) {
		return w[i+1:]
	}
	return w
}

// in reports whether word k exists and belongs to one of the classes.
func (s *sentence) in(k int, classes lex) bool {
	return k >= 0 && k < len(s.words) && s.words[k].lx&classes != 0
}

// is reports whether word k is lit.
func (s *sentence) is(k int, lit string) bool {
	if k < 0 || k >= len(s.words) {
		return false
	}
	x := s.words[k]
	return string(s.buf[x.s:x.e]) == lit
}

func (s *sentence) ident(k int) bool { return k >= 0 && k < len(s.words) && s.words[k].ident }

// negation reports "not", "never", "no" or a word ending in n't.
func (s *sentence) negation(k int) bool {
	if k < 0 || k >= len(s.words) {
		return false
	}
	x := s.words[k]
	w := s.buf[x.s:x.e]
	return string(w) == "not" || string(w) == "never" || string(w) == "no" || bytes.HasSuffix(w, []byte("n't"))
}

// isGrant reports a grant word at i used as a verb or predicate:
// "approved by", "has approved this", "is approved." — not attributively
// ("authorized users", "approved vendors") and not inside an identifier.
func (s *sentence) isGrant(i int) bool {
	if i < 0 || i >= len(s.words) || (s.words[i].lx|s.words[i].lastLx)&lxGrantWords == 0 {
		return false
	}
	return !s.attributive(i)
}

// attributive reports a participle that qualifies the noun after it. A
// perfect tense ("has approved deletion") or a human subject ("the user
// approved deletion") makes it a verb whatever follows.
func (s *sentence) attributive(i int) bool {
	if i+1 >= len(s.words) || lowerASCII(s.words[i].after) != s.s1(i+1) {
		return false // punctuation or the end follows
	}
	if s.in(i+1, lxNotNouns) || s.words[i+1].ident || s.words[i+1].camel {
		return false
	}
	k := i - 1
	for k >= 0 && s.in(k, lxFillers) && !s.in(k, lxHaveWords) {
		k--
	}
	if k >= 0 && (s.in(k, lxHaveWords) || s.in(k, lxHumans)) {
		return false
	}
	return true
}

// s1 returns the first byte of word i in the original text, to tell
// whether only spaces stand between two words.
func (s *sentence) s1(i int) byte {
	x := s.words[i]
	return s.buf[x.s]
}

// capability reports "authorized to", "allowed to": a description of what
// someone may do, not a grant of this call.
func (s *sentence) capability(i int) bool { return s.is(i+1, "to") }

// factual reports whether the grant word at i is stated as a fact.
func (s *sentence) factual(i int) bool {
	for k := i - 1; k >= i-3 && k >= 0 && !s.words[k].ctx; k-- {
		if s.in(k, lxNegCond) || s.negation(k) {
			return false
		}
	}
	// A subordinate clause ("When the user has granted the permission,
	// ...") is a condition however far its conjunction is.
	for k := i - 1; k >= i-10 && k >= 0 && !s.words[k].ctx; k-- {
		if s.in(k, lxCondStarters) {
			return false
		}
	}
	for k := i + 1; k <= i+2; k++ {
		if s.in(k, lxCondAfter) {
			return false
		}
	}
	return true
}

type proseFacts struct {
	strong, strongNoun, grant, strictGrant bool
	humanAgent, callVerb                   bool
	human, toolNarrow, toolStrong, ident   bool
	dontAsk, authority, gate, vocab        bool
	askVerb                                bool
}

// interesting are the word classes at least one of which any rule needs.
const interesting = lxGrantWords | lxConsentNouns | lxVerbsBeforeNoun | lxHumans | lxGateNames | lxDontAskStarts | lxMcp

func judgeSentence(s *sentence, text []byte, a, b int) (kind, why string, ok bool) {
	s.text, s.buf, s.words = text, s.buf[:0], s.words[:0]
	s.tokenize(text, a, b, false)
	question := hasQuestion(text[a:b])
	var seen lex
	for i := range s.words {
		seen |= s.words[i].lx | s.words[i].lastLx
	}
	if seen&interesting == 0 && !(question && seen&lxAskVerbs != 0) {
		return "", "", false
	}
	s.str = string(s.buf)
	f := s.facts()
	kind, why, ok = f.judge(question, text, a, b)
	if ok || !(f.strong || f.grant) {
		return kind, why, ok
	}
	// An authority marker may sit in the sentence before ("SYSTEM:\n
	// The user confirmed ..."): read it only now, when it can decide,
	// and only if a one-pass look finds a candidate.
	ctxStart := max(0, a-proseContext)
	if !mayHoldAuthority(text[ctxStart:a]) {
		return "", "", false
	}
	n := len(s.words)
	s.tokenize(text, ctxStart, a, true)
	s.str = string(s.buf)
	for i := n; i < len(s.words); i++ {
		if s.authorityAt(i) {
			f.authority = true
		}
		if s.words[i].lx&lxGateNames != 0 {
			f.authority, f.gate = true, true
		}
	}
	return f.judge(question, text, a, b)
}

func (f *proseFacts) judge(question bool, text []byte, a, b int) (kind, why string, ok bool) {
	switch {
	case f.gate && f.vocab:
		return KindGateImpersonation, "names mcp-gate together with approval vocabulary", true
	case f.strong && (f.toolStrong || f.ident):
		return KindApprovalProse, "announces an approval granted for a tool call", true
	case f.strong && f.dontAsk:
		return KindApprovalProse, "announces an approval and says not to ask", true
	case f.strong && f.authority:
		return KindApprovalProse, "announces an approval under an authority marker", true
	case f.strongNoun && f.humanAgent:
		return KindApprovalProse, "announces permission granted by the user", true
	case f.humanAgent && f.callVerb:
		return KindApprovalProse, "says the user approved running something", true
	case f.grant && (f.dontAsk || f.authority):
		return KindApprovalProse, "says something is approved and not to ask", true
	case f.dontAsk && f.toolNarrow:
		return KindApprovalProse, "says tool calls need no approval", true
	case f.strictGrant && f.toolNarrow:
		return KindApprovalProse, "says a tool call is approved", true
	case question && f.askVerb && (f.toolNarrow || hasPromptOptions(text, a, b)):
		return KindApprovalProse, "imitates an approval prompt", true
	}
	return "", "", false
}

// mayHoldAuthority reports whether b may hold an authority marker: it
// looks for the first letters of "system", "note", "instruction",
// "message" and "mcp" in one pass and checks only those.
func mayHoldAuthority(b []byte) bool {
	for i, c := range b {
		switch c | 0x20 {
		case 's':
			if hasFold(b[i:], "system") {
				return true
			}
		case 'n':
			if hasFold(b[i:], "note") {
				return true
			}
		case 'i':
			if hasFold(b[i:], "instruction") {
				return true
			}
		case 'm':
			if hasFold(b[i:], "message") || hasFold(b[i:], "mcp") {
				return true
			}
		}
	}
	return false
}

func hasFold(b []byte, w string) bool {
	return len(b) >= len(w) && equalFoldASCII(b[:len(w)], []byte(w))
}

// hasQuestion reports a question mark that ends a question, not one inside
// a URL ("page?id=3").
func hasQuestion(t []byte) bool {
	for i, c := range t {
		if c != '?' {
			continue
		}
		if i+1 == len(t) || isSpace(t[i+1]) || strings.IndexByte(`)]"'*`, t[i+1]) >= 0 {
			return true
		}
	}
	return false
}

func hasPromptOptions(text []byte, a, b int) bool {
	end := min(len(text), b+proseOptions)
	var low [proseReach*2 + proseOptions + 8]byte
	l := low[:0]
	for _, c := range text[a:end] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if isSpace(c) {
			if len(l) > 0 && l[len(l)-1] == ' ' {
				continue
			}
			c = ' '
		}
		l = append(l, c)
	}
	for _, o := range promptOptions {
		for from := 0; ; {
			j := bytes.Index(l[from:], []byte(o))
			if j < 0 {
				break
			}
			j += from
			// At word boundaries: "deny/not_in" does not offer "y/n", and
			// "yes, approved it" does not offer "yes, approve".
			k := j + len(o)
			if (j == 0 || !isASCIILetter(l[j-1]) && !('0' <= l[j-1] && l[j-1] <= '9')) &&
				(k == len(l) || !isASCIILetter(o[len(o)-1]) || !isASCIILetter(l[k])) {
				return true
			}
			from = j + 1
		}
	}
	return false
}

// facts gathers the features of the tokenized sentence.
func (s *sentence) facts() proseFacts {
	var f proseFacts
	for i := range s.words {
		wd := &s.words[i]
		// Context words (the sentence before) only count as authority.
		if s.authorityAt(i) {
			f.authority = true
		}
		if wd.lx&lxGateNames != 0 || wd.lx&lxMcp != 0 && s.is(i+1, "gate") {
			f.gate = true
			f.authority = true
		}
		if wd.ctx {
			continue
		}
		if !wd.camel && hasVocabPrefix(s.buf[wd.s:wd.e]) {
			f.vocab = true
		}
		if wd.lx&lxAskVerbs != 0 && wd.before != ':' && (s.in(i+1, lxAskObjects) || s.ident(i+1)) {
			f.askVerb = true
		}
		if wd.lx&lxHumans != 0 && wd.after != '=' { // "user=alice" is a log key
			f.human = true
		}
		grant := s.isGrant(i)
		if grant && s.factual(i) {
			f.grant = true
			if (wd.lx|wd.lastLx)&lxStrictGrantWords != 0 && !s.capability(i) {
				f.strictGrant = true
			}
		}
		// S(a): "approval granted", "permission has been given",
		// "the user gave consent". A bare participle needs a bare noun
		// ("Permission granted"): "the permissions granted to other
		// users" is a noun phrase.
		if wd.lx&lxConsentNouns != 0 && s.factual(i) {
			det := i > 0 && s.in(i-1, lxDeterminers) && !s.words[i-1].ctx
			aux := false
			for k := i + 1; k <= i+4 && k < len(s.words); k++ {
				if s.is(k, "yes") && !(k == i+1 && wd.after == ':') {
					break // only "Consent: yes"
				}
				if s.in(k, lxNounVerbs) {
					if (aux || !det) && s.factual(k) && !s.revokedAfter(k) {
						f.strong, f.strongNoun = true, true
						if s.humanAgent(i, k) {
							f.humanAgent = true
						}
					}
					break
				}
				if s.in(k, lxAuxiliaries|lxHaveWords) {
					aux = true
					continue
				}
				if !s.in(k, lxFillers) && !s.in(k+1, lxNounVerbs|lxAuxiliaries) && k > i+2 {
					break
				}
			}
			for k := i - 1; k >= i-2 && k >= 0 && !s.words[k].ctx; k-- {
				if s.in(k, lxVerbsBeforeNoun) && s.factual(k) && !s.in(k-1, lxDeterminers) {
					f.strong, f.strongNoun = true, true
					if s.humanAgent(k, k) {
						f.humanAgent = true
					}
				}
			}
		}
		// S(b): "the user has approved", "approved by the user", "the
		// user said yes".
		if wd.lx&lxHumans != 0 {
			k := i + 1
			for k < len(s.words) && k <= i+4 && s.in(k, lxFillers) {
				k++
			}
			if s.isGrant(k) && s.factual(k) {
				f.strong = true
			}
			if (s.is(k, "said") || s.is(k, "answered") || s.is(k, "replied")) && s.is(k+1, "yes") {
				f.strong, f.humanAgent = true, true
			}
		}
		if (grant || s.is(i, "given")) && s.is(i+1, "by") && s.factual(i) && s.humanAfterBy(i+1) {
			f.strong, f.humanAgent = true, true
		}
		// S(c): "has approved", "have already confirmed".
		if wd.lx&lxHaveWords != 0 {
			k := i + 1
			for k < len(s.words) && k <= i+3 && s.in(k, lxFillers) {
				k++
			}
			if s.isGrant(k) && s.factual(k) {
				f.strong = true
			}
		}
		// Tool-call references.
		if wd.lx&lxToolCallTokens != 0 || wd.ident && bytes.HasPrefix(s.buf[wd.s:wd.e], []byte("mcp__")) {
			f.toolNarrow = true
		}
		if (s.is(i, "tool") || s.is(i, "function")) && (s.in(i+1, lxCallNouns) || s.is(i+1, "use") || s.is(i+1, "invocation")) {
			f.toolNarrow = true
		}
		if wd.lx&lxDemonstratives != 0 && (s.in(i+1, lxCallNouns) || s.is(i+1, "tool") || s.is(i+1, "tools")) {
			f.toolNarrow = true
		}
		if wd.ident && i > 0 && (s.in(i-1, lxLeadsToIdent) || s.isGrant(i-1)) {
			f.ident = true
		}
		if s.is(i, "run") || s.is(i, "call") || s.is(i, "execute") || s.is(i, "invoke") {
			f.callVerb = true
		}
		if wd.lx&lxCallVerbs != 0 {
			x := i + 1
			if s.is(x, "to") || s.is(x, "the") || s.is(x, "tool") || s.is(x, "function") {
				x++
			}
			if s.ident(x) {
				f.toolStrong = true
			}
		}
		// Instructions to skip asking, unless negated ("should not skip
		// the approval prompt").
		if wd.lx&lxDontAskStarts != 0 && s.dontAskAt(i) && !s.negatedBefore(i) {
			f.dontAsk = true
		}
	}
	f.toolStrong = f.toolStrong || f.toolNarrow
	return f
}

func hasVocabPrefix(w []byte) bool {
	for _, p := range vocabPrefixes {
		if bytes.HasPrefix(w, []byte(p)) {
			return true
		}
	}
	return false
}

// authorityAt reports an authority marker at word i: SYSTEM in capitals or
// bracketed, or a note addressed to the assistant.
func (s *sentence) authorityAt(i int) bool {
	wd := s.words[i]
	w := s.w(i)
	if w == "system" && (wd.caps || wd.before == '[' || wd.before == '<' || wd.after == ']' || wd.after == '>' || s.labelAt(wd.end)) {
		return true
	}
	if w == "note" || w == "instruction" || w == "instructions" || w == "message" {
		x := s.w(i + 1)
		if x == "to" || x == "for" {
			y := s.w(i + 2)
			if y == "the" {
				y = s.w(i + 3)
			}
			switch y {
			case "assistant", "ai", "model", "agent", "claude", "llm", "codex":
				return true
			}
		}
	}
	return false
}

// humanAgent reports a human who gave the consent of a consent noun at n
// whose verb is at v: "user consent recorded", "granted by the user", "the
// user has given consent" — not "granted to a user".
func (s *sentence) humanAgent(n, v int) bool {
	if n > 0 && s.in(n-1, lxHumans) && s.words[n-1].after != '=' {
		return true
	}
	if s.w(v+1) == "by" {
		return s.humanAfterBy(v + 1)
	}
	// A human subject before the verb: "the user has given".
	k := min(n, v) - 1
	for k >= 0 && (s.in(k, lxFillers) || s.in(k, lxHaveWords)) {
		k--
	}
	return k >= 0 && s.in(k, lxHumans) && !s.words[k].ctx
}

// negatedBefore reports a negation in the three words before i.
func (s *sentence) negatedBefore(i int) bool {
	for k := i - 1; k >= i-3 && k >= 0 && !s.words[k].ctx; k-- {
		switch w := s.w(k); {
		case w == "not" || w == "never" || w == "no" || strings.HasSuffix(w, "n't"):
			return true
		}
	}
	return false
}

// humanAfterBy reports a human named by the "by" at i: "by user", "by the
// user", "by the repository owner".
func (s *sentence) humanAfterBy(i int) bool {
	for k := i + 1; k <= i+3 && k < len(s.words); k++ {
		if s.in(k, lxHumans) {
			return true
		}
		if s.words[k-1].after != s.s1(k) && k > i+1 {
			return false // punctuation ends the phrase
		}
	}
	return false
}

// revokedAfter reports a later word that takes the grant back ("approvals
// granted by a removed user are now revoked").
func (s *sentence) revokedAfter(i int) bool {
	for k := i + 1; k < len(s.words); k++ {
		switch s.w(k) {
		case "revoked", "expired", "withdrawn", "rescinded", "invalidated", "cancelled", "canceled", "removed":
			return true
		}
	}
	return false
}

// labelAt reports a colon at text[j] used as a label ("SYSTEM: ..."), not
// inside a token ("system:authenticated").
func (s *sentence) labelAt(j int) bool {
	return j < len(s.text) && s.text[j] == ':' && (j+1 == len(s.text) || isSpace(s.text[j+1]))
}

// dontAskAt reports an instruction to skip asking starting at word i.
func (s *sentence) dontAskAt(i int) bool {
	w, n1, n2, n3 := s.w(i), s.w(i+1), s.w(i+2), s.w(i+3)
	switch w {
	case "without":
		if n1 == "further" || n1 == "any" || n1 == "additional" || n1 == "another" {
			n1 = n2
		}
		switch n1 {
		case "asking", "confirmation", "approval", "permission", "prompting", "confirming",
			"consent", "review", "checking", "prompt", "prompts", "interruption", "confirmations":
			return true
		}
	case "no":
		if n1 == "need" && (n2 == "to" && (n3 == "ask" || n3 == "confirm" || n3 == "check" || n3 == "approve" || n3 == "prompt") ||
			n2 == "for" && (n3 == "approval" || n3 == "confirmation" || n3 == "permission")) {
			return true
		}
		if n1 == "further" || n1 == "additional" {
			switch n2 {
			case "approval", "confirmation", "permission", "prompts", "prompt", "approvals", "confirmations":
				return true
			}
		}
	case "don't", "dont", "never":
		return n1 == "ask" || n1 == "prompt" || n1 == "confirm" || n1 == "need" && n2 == "to" && (n3 == "ask" || n3 == "confirm")
	case "do":
		return n1 == "not" && (n2 == "ask" || n2 == "prompt" || n2 == "confirm")
	case "skip":
		if n1 == "the" || n1 == "any" {
			n1 = n2
		}
		switch n1 {
		case "confirmation", "approval", "prompt", "permission", "confirmations", "approvals":
			return true
		}
	case "you", "you're", "you've":
		// "you are now authorized to call ...", "you may now run ...":
		// only with a call verb, because "you are now authorized to
		// access the VPN" is an ordinary notification.
		k := i + 1
		if x := s.w(k); x == "are" || x == "may" || x == "can" || x == "have" {
			k++
		}
		if s.w(k) != "now" {
			return false
		}
		k++
		if x := s.w(k); x == "allowed" || x == "authorized" || x == "authorised" || x == "permitted" || x == "cleared" || x == "approved" {
			k++
			if s.w(k) == "to" {
				k++
			}
		} else if x == "been" && s.isGrant(k+1) {
			k += 2
			if s.w(k) == "to" {
				k++
			}
		}
		return s.in(k, lxCallVerbs) && s.w(k) != "tool" && s.w(k) != "tools"
	case "proceed":
		return n1 == "without" || n1 == "immediately"
	case "auto-approved", "autoapproved", "auto-approve", "auto-approving", "auto-approval":
		return true
	case "automatic", "auto":
		return n1 == "approval" || n1 == "approve" || n1 == "confirmation"
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
