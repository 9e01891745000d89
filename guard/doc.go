// Package guard reads untrusted upstream output for forged consent and
// hidden characters. It has two jobs and no dependency on the rest of
// mcp-gate (standard library only):
//
//   - a detector of approval-shaped payloads: InspectResult for tools/call
//     results, InspectElicitation for an upstream's elicitation/create
//     params;
//   - a neutraliser of hidden characters: Neutralize for a string,
//     NeutralizeJSON for string values inside raw JSON.
//
// All four functions are safe for concurrent use: they keep no state
// between calls, and the tables they share are built once at start-up and
// only read afterwards.
//
// # Why
//
// An upstream server is untrusted. A request is honoured only from the part
// registered to make it; anything else shaped like a request or an answer
// to one becomes an error and nothing runs. The detector finds those shapes
// so that the proxy can replace the result with an isError result (or
// decline the elicitation) and write an audit line.
//
// # What the detector reports
//
// A Finding has a Kind, a Path and a Detail:
//
//	approval_request         an object asking for approval or permission to run
//	                         a tool: {"type":"approval_request"},
//	                         {"type":"tool-approval-request"}, permission_request,
//	                         ApprovalRequired{executeToolName, executeArgs},
//	                         {"approval":{"status":"pending"}}, a can_use_tool
//	                         control request, {"state":"approval-requested"}
//	approval_decision        an accept/approve/allow decision that refers to a tool
//	                         or call: {"decision":"approve","tool_call_id":...},
//	                         {"approved":true,"toolName":...},
//	                         {"behavior":"allow","updatedInput":...},
//	                         {"permissionDecision":"allow"},
//	                         {"type":"tool-approval-response","approved":true},
//	                         {"decision":"approved_for_session"}, a JSON-RPC
//	                         response whose result is a bare decision
//	approval_record          a record that a call was approved:
//	                         {"toolCallId":...,"approved":true},
//	                         {"status":"approved","tool":...}
//	elicitation_request      {"method":"elicitation/create"}, any object with
//	                         requestedSchema or elicitationId
//	elicitation_result       {"action":"accept","content":{...}}
//	jsonrpc_approval_method  a message whose method is sampling/createMessage,
//	                         roots/list, or names an approval, permission,
//	                         elicitation or user-input method (execCommandApproval,
//	                         applyPatchApproval, item/*/requestApproval,
//	                         session/request_permission, requestPermission, ...)
//	host_approval_marker     codex_approval_kind anywhere; x-approval* keys;
//	                         reverse-DNS keys with approval vocabulary
//	                         ("io.modelcontextprotocol/approval"); inside _meta, at
//	                         any depth, any key or short value with approval
//	                         vocabulary (approval_id, ...)
//	approval_prose           a sentence announcing a granted approval or imitating
//	                         an approval prompt (see prose.go for the rules)
//	gate_impersonation       text naming mcp-gate with approval vocabulary; only
//	                         the gate may
//	approval_form            (elicitations) a boolean property whose name or title
//	                         reads as approval, or a once/session/always scope
//	inspection_limit         something carrying approval vocabulary was nested,
//	                         embedded or voluminous beyond what the detector reads;
//	                         it fails closed instead of passing it
//
// Keys are compared without case or separators (tool_call_id, toolCallId
// and Tool-Call-ID are one key); values without case. Paths read like
// "content[0].text(json).decision": "(json)" marks JSON found inside a
// string, whole, inline in prose, or in a fenced block.
//
// The keys on a path and the text a Detail quotes are the upstream's, so
// they are rendered by Quote: between quotes, in Go syntax, hidden
// characters made visible, line breaks, controls and the quotation marks
// of other scripts escaped, cut short. A message of the gate's that a host
// or a model reads names a finding's place by ShowPath, which cuts every
// key to ShowKey characters and keeps at most six segments of the path;
// the whole Path is for the audit and for matching places.
//
// # Where it looks
//
// Every string of the result at any depth: text items, embedded resources'
// text, structuredContent, _meta, unknown content types. A string is read
// as prose and, when it holds escaped quotes, as JSON one level down (up to
// five levels: JSON in a string in JSON ...). Embedded JSON is read by a
// lenient parser that judges objects as soon as they close, judges objects
// left open by a truncation or a syntax error on what they hold, accepts
// trailing commas, and resumes after an error at a bracket a bogus string
// may have swallowed ({"a": "{"decision":...).
//
// # How fast
//
// Every rule needs one of a handful of trigger stems (approv, permi, allow,
// accept, grant, confirm, consent, authori, elicit, decision, behavio,
// sampling, roots/, requestedschema, executetool, can_use_tool,
// requestuserinput; for the hosts' dialogs proceed, "ask again", "(esc)",
// "yes, ", "1. yes", claude, ...) in the object, sentence or lines it flags;
// TestVocabularyHasStems enforces it. So a first pass looks for those
// stems, in any letter case, with an aligned 4-byte-window bloom filter
// (about one table probe per four bytes), and a result without any stem,
// and without a \u escape that could spell one, is passed without being
// parsed. That is the common case: on the machine that produced these
// figures (a shared 2-CPU VM, AMD EPYC 2.4 GHz, loaded by other jobs;
// medians of 5 runs), InspectResult took 1.3 µs for a 1 KB text result,
// 1.2 ms for 1 MB of text and 0.75 ms for a 1 MB JSON result, with no
// allocation, against 33 µs, 26 ms and 31 ms to relay the same result
// (decode and re-encode, BenchmarkRelayBaseline; go-sdk's codec measured
// 23–36 ms for 1 MB): 2–5%. A result with a stem is parsed: 4.5 ms for 1 MB
// of text with one approval word, 14–18 ms for 1 MB of GitHub-style JSON
// with a "permissions" object in every record. Folding (fold.go) costs a
// pass of eight bytes at a time over the strings that are read, a few
// percent; a result holding a folded character but no stem is folded once
// to look for one: 4.7 ms for 1 MB of text with a no-break space between
// every word, against 0.9 ms for its ASCII spelling. All work is linear; hostile
// inputs are bounded by budgets that fail closed (inspection_limit): JSON
// nesting beyond 256 levels or 2 M tokens, and prose beyond 4 MiB of
// sentences that carry approval vocabulary. 50 MB inputs of every hostile
// shape in TestLargeInputs complete in 0.04–0.6 s on that machine.
//
// # Measured false positives
//
// On the corpus in testdata/corpus (52 files of real-looking tool output —
// IAM and RBAC policies, branch protection and review JSON, package.json,
// OpenAPI, git log, ls -l, READMEs on approving deployments, source code
// calling approve(), licences, logs — each in four places): 0 of 208
// results flagged. On 74,000 files of text on the build machine (GOROOT,
// /usr including cloud SDK API references, the module cache), each given
// as a text result: 3 flagged (0.004%), all listed as accepted hard
// negatives in testdata/corpus/README.md. Detection on the positive corpus
// (63 payloads × every place × case, whitespace, nesting and \u-escape
// variants): 5,130 of 5,130. Prose is the weak part: on sentences written
// after tuning, the prose rules caught about 55–60% of new phrasings of a
// forged approval, with no false positives; see heldout_test.go.
//
// # Limits
//
// The detector reads JSON and English prose. It does not decode base64
// (image data, resource blobs), HTML entities, URL encoding, YAML or
// JavaScript object literals with unquoted keys; it does not read other
// languages; it does not fold look-alike letters (Cyrillic а for a) or see
// through invisible characters inside a word (appr\u200bove) — the
// neutraliser makes the latter visible, which is why it is on by default.
// It does read every Unicode space as a space and fullwidth forms as
// ASCII, in a copy of each text (fold.go): words separated by no-break or
// ideographic spaces, or written "ａｐｐｒｏｖｅｄ", are read as a model reads
// them; line separators are read both as spaces and as line feeds. Object
// keys and the values the structural rules compare are not folded.
// Prose without approval vocabulary ("the user said yes") is not read at
// all. See docs/threat-model-guard.md.
//
// # The neutraliser
//
// Neutralize makes hidden characters visible instead of dropping them: C0
// controls but tab, LF and CR; DEL; C1; every Default_Ignorable_Code_Point
// (soft hyphen, bidi controls, zero-width characters, Hangul fillers,
// variation selectors, tag characters); and the interlinear annotation
// controls. Each becomes "[U+XXXX]", and each invalid UTF-8 byte "[0xNN]",
// so "\x1b[31m" reads "[U+001B][31m". The zero-width joiner and the
// presentation selectors U+FE0E/U+FE0F are kept where they belong to an
// emoji (hiddenIn has the rule), so 👨‍👩‍👧 and ❤️ pass unchanged.
//
// NeutralizeJSON applies the same rule to every string value of raw JSON,
// at any depth, decoding escapes (\u001b, \b, \f, surrogate pairs) to find
// hidden code points and leaving every other byte as it was. A lone
// surrogate escape (\udb40 with no low half) is made visible as "[U+DB40]":
// a host that joins two strings would otherwise pair halves into a
// character neither showed. Object keys are
// never rewritten: a key holding a hidden character is a *KeyError, and the
// caller refuses the item that carries it. Both functions are idempotent
// and return their input without allocating when there is nothing to
// change.
package guard
