package guard

import (
	"strings"
	"unicode/utf8"
)

// Finding is one approval-shaped payload found in untrusted output.
type Finding struct {
	// Kind is a stable machine name; see the Kind* constants.
	Kind string
	// Path says where: "content[2].text", "content[0].text(json).decision",
	// "structuredContent.a.b", "_meta.codex_approval_kind". "(json)" marks
	// JSON found inside a string. Keys that are not 1 to 64 ASCII
	// letters, digits or _-$@ are written `["..."]` by Quote (cut at 40
	// characters). A message of the gate's names the place by
	// ShowPath(Path), which shows less of the upstream's keys.
	Path string
	// Detail is short, human-readable and safe to show: truncated, with
	// hidden characters made visible, never a dump of the payload.
	Detail string
}

// Kinds of finding. The names are stable: audit lines and tests match them.
const (
	// KindApprovalRequest: an object asking for approval or permission to
	// run a tool ({"type":"approval_request"}, {"executeToolName":...},
	// {"approval":{"status":"pending"}}, a can_use_tool control request).
	KindApprovalRequest = "approval_request"
	// KindApprovalDecision: an accept/approve/allow decision that refers to
	// a tool or call ({"decision":"approve","tool_call_id":...},
	// {"behavior":"allow","updatedInput":...}, {"permissionDecision":"allow"}).
	KindApprovalDecision = "approval_decision"
	// KindApprovalRecord: a record saying a tool or call was approved
	// ({"toolCallId":...,"approved":true}, {"status":"approved","tool":...}).
	KindApprovalRecord = "approval_record"
	// KindElicitationRequest: an MCP elicitation request
	// ({"method":"elicitation/create"}, {"requestedSchema":...}).
	KindElicitationRequest = "elicitation_request"
	// KindElicitationResult: an MCP elicitation answer that accepts
	// ({"action":"accept","content":{...}}).
	KindElicitationResult = "elicitation_result"
	// KindJSONRPCApprovalMethod: a JSON-RPC message of an approval,
	// permission, elicitation, sampling or roots method.
	KindJSONRPCApprovalMethod = "jsonrpc_approval_method"
	// KindHostApprovalMarker: a host-specific approval marker
	// (_meta.codex_approval_kind, approval keys in _meta, x-approval).
	KindHostApprovalMarker = "host_approval_marker"
	// KindApprovalProse: text announcing a granted approval or imitating an
	// approval prompt.
	KindApprovalProse = "approval_prose"
	// KindHostDialog: text drawing a host's own permission dialog, the
	// numbered menus Claude Code, Codex and Gemini CLI ask with ("Do you
	// want to proceed? ❯ 1. Yes  2. Yes, and don't ask again ..."), asked
	// or already answered.
	KindHostDialog = "host_dialog"
	// KindGateImpersonation: text or an elicitation that names mcp-gate
	// together with approval vocabulary; only the gate itself may.
	KindGateImpersonation = "gate_impersonation"
	// KindApprovalForm: an elicitation schema shaped like an approval form
	// (an approve/allow boolean, a once/session scope).
	KindApprovalForm = "approval_form"
	// KindInspectionLimit: part of the input carries approval vocabulary but
	// is nested or embedded deeper than the detector follows. The detector
	// fails closed rather than pass what it could not read.
	KindInspectionLimit = "inspection_limit"
)

const (
	// maxFindings bounds the work done on a hostile input: one finding
	// already refuses the result, a few more help the audit.
	maxFindings = 16
	// maxDepth is the JSON nesting followed per text; deeper values are
	// skipped and, when they carry a stem, reported as KindInspectionLimit.
	// go-sdk itself refuses messages nested deeper than 1000.
	maxDepth = 256
	// maxLevel is how many times JSON inside a string inside JSON is
	// followed (level 0 is the result itself).
	maxLevel = 5
)

// inspector collects findings for one call of InspectResult or
// InspectElicitation. It is not safe for concurrent use; each call makes
// its own.
type inspector struct {
	findings []Finding
	seen     map[findingKey]bool
	// elicitRoot exempts the root object from the elicitation-request
	// shape rule: InspectElicitation's input is an elicitation request.
	elicitRoot bool
	scratch    []byte
	sent       sentence // reused by prose
	norm       []byte   // scratch for normalised keys and values, cap 256
	proseWork  int      // bytes of sentences read so far, against maxProseWork
	dlg        dialogScratch
	dialogWork int  // bytes of dialog windows read so far, against maxDialogWork
	tokens     int  // JSON tokens read so far, against maxTokens
	stopped    bool // a budget ran out: stop reading
}

type findingKey struct {
	kind string
	path string
}

func (in *inspector) full() bool { return in.stopped || len(in.findings) >= maxFindings }

// maxTokens bounds the JSON tokens (keys, values, brackets) the slow path
// reads in one call: 20–35 MB of API-style JSON, far more than a host
// shows a model (hosts truncate tool output to tens of kilobytes), and a
// fixed ceiling on the time a hostile input can cost.
const maxTokens = 2 << 20

// overBudget counts one token and reports whether the budget is spent.
// It is small enough to inline; the walker records the finding.
func (in *inspector) overBudget() bool {
	in.tokens++
	return in.tokens > maxTokens
}

func (in *inspector) add(kind, path, detail string) {
	if in.full() {
		return
	}
	k := findingKey{kind, path}
	if in.seen[k] {
		return
	}
	if in.seen == nil {
		in.seen = map[findingKey]bool{}
	}
	in.seen[k] = true
	in.findings = append(in.findings, Finding{Kind: kind, Path: path, Detail: detail})
}

// snippet renders untrusted text for a Detail: Quote's rendering, cut
// after n characters.
func snippet(b []byte, n int) string {
	return Quote(string(b), n)
}

// truncDetailN cuts s to at most max bytes on a rune boundary.
func truncDetailN(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// PathWithKey returns the path of the member key of the object at path, as
// a Finding's Path writes it ("" is the inspected value itself). Callers
// that walk a decoded copy of what they inspected use it to tell where a
// finding lies.
func PathWithKey(path, key string) string {
	var sb strings.Builder
	sb.WriteString(path)
	pathKey(&sb, []byte(key))
	return sb.String()
}

// PathExact reports whether path names one place only: no key on it was
// cut short or had characters made visible, as pathKey does to a key too
// long or hidden characters in it. Two keys that differ only past the cut,
// or in a hidden character and its visible form ("k\u200b" and
// "k[U+200B]"), are written alike; a path with such a key may be another
// member's. Callers that match a finding's path against a place they know
// must not match such a path.
func PathExact(path string) bool {
	return !strings.Contains(path, "…") && !strings.Contains(path, "[U+") && !strings.Contains(path, "[0x")
}

// pathKey renders one object key as a path segment: ".name" for plain keys,
// `["..."]` otherwise.
func pathKey(sb *strings.Builder, key []byte) {
	if plainKey(key) {
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.Write(key)
		return
	}
	sb.WriteByte('[')
	sb.WriteString(snippet(key, 40))
	sb.WriteByte(']')
}
