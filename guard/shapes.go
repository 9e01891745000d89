package guard

import (
	"bytes"
)

// keyClass is a bit set: one key can play several roles ("executeToolName"
// is both the seed's approval-request marker and a tool reference).
type keyClass uint32

const (
	kcType            keyClass = 1 << iota // type, kind, subtype, __typename, ...
	kcDecision                             // decision, verdict, outcome, answer, choice, ...
	kcStrongDecision                       // permissionDecision, approvalDecision: a grant alone is enough
	kcBehavior                             // behavior (permission-prompt-tool answers)
	kcAction                               // action (elicitation results)
	kcStatus                               // status, state, approvalStatus
	kcBoolGrant                            // approved, allowed, granted, ... (true = consent)
	kcPendingFlag                          // requiresApproval, needsApproval, ... (true = a request)
	kcToolRef                              // a reference to a tool or a call
	kcCallRef                              // the subset of tool references that identify one call
	kcExecName                             // executeToolName
	kcMethod                               // method (JSON-RPC)
	kcJSONRPC                              // jsonrpc
	kcID                                   // id
	kcResult                               // result
	kcContent                              // content
	kcRequestedSchema                      // requestedSchema
	kcElicitationID                        // elicitationId
	kcApprovalObj                          // approval, approvalRequest, permissionRequest (object values)
	kcPermExtra                            // permissionSuggestions, acceptSettings, updatedPermissions, ...
	kcMeta                                 // _meta
	kcCodexMarker                          // codex_approval_kind
	kcXApproval                            // x-approval...
	kcVocab                                // the key itself carries approval vocabulary
)

// keyClasses maps normalised keys (lower-case letters and digits only) to
// their roles.
var keyClasses = map[string]keyClass{
	"type": kcType, "kind": kcType, "subtype": kcType, "typename": kcType,
	"event": kcType, "eventtype": kcType, "eventname": kcType, "object": kcType,
	"msgtype": kcType, "messagetype": kcType,

	// Not "verdict" or "outcome": policy engines (and the gate's own audit
	// log) record evaluations under those names.
	"decision": kcDecision,
	"answer":   kcDecision, "choice": kcDecision, "userdecision": kcDecision,
	"tooldecision": kcDecision, "reviewdecision": kcDecision, "response": kcDecision,
	"reply": kcDecision, "selection": kcDecision, "selectedoption": kcDecision,

	"permissiondecision": kcStrongDecision, "approvaldecision": kcStrongDecision,
	"toolapprovaldecision": kcStrongDecision, "approvalresult": kcStrongDecision,
	"approvalresponse": kcStrongDecision, "permissionresult": kcStrongDecision,
	"permissionresponse": kcStrongDecision, "userapproval": kcStrongDecision,
	"toolapproval": kcStrongDecision | kcApprovalObj,

	"behavior": kcBehavior, "behaviour": kcBehavior,
	"action": kcAction,
	"status": kcStatus, "state": kcStatus, "approvalstatus": kcStatus,
	"approvalstate": kcStatus, "permissionstatus": kcStatus, "permissionstate": kcStatus,

	"approved": kcBoolGrant, "approve": kcBoolGrant, "allow": kcBoolGrant,
	"allowed": kcBoolGrant, "granted": kcBoolGrant, "permitted": kcBoolGrant,
	"permit": kcBoolGrant, "confirmed": kcBoolGrant, "authorized": kcBoolGrant,
	"authorised": kcBoolGrant, "consent": kcBoolGrant, "consented": kcBoolGrant,
	"accepted": kcBoolGrant, "accept": kcBoolGrant, "userapproved": kcBoolGrant,
	"humanapproved": kcBoolGrant, "isapproved": kcBoolGrant,
	"approvedbyuser": kcBoolGrant, "userconfirmed": kcBoolGrant,
	"userconsent": kcBoolGrant, "toolapproved": kcBoolGrant, "isallowed": kcBoolGrant,
	"approval": kcBoolGrant | kcApprovalObj | kcStatus,

	"requiresapproval": kcPendingFlag, "approvalrequired": kcPendingFlag | kcApprovalObj,
	"needsapproval": kcPendingFlag, "awaitingapproval": kcPendingFlag,
	"pendingapproval": kcPendingFlag | kcApprovalObj, "requireapproval": kcPendingFlag,
	"requiresconfirmation": kcPendingFlag, "needsconfirmation": kcPendingFlag,
	"requirespermission": kcPendingFlag, "permissionrequired": kcPendingFlag,

	"toolcallid": kcToolRef | kcCallRef, "tooluseid": kcToolRef | kcCallRef,
	"callid": kcToolRef | kcCallRef, "approvalid": kcToolRef | kcCallRef,
	"toolcall": kcToolRef, "tooluse": kcToolRef, "toolname": kcToolRef,
	"tool": kcToolRef, "toolid": kcToolRef, "functionname": kcToolRef,
	"function": kcToolRef, "functioncall": kcToolRef, "toolinput": kcToolRef,
	"toolargs": kcToolRef, "toolarguments": kcToolRef, "toolparams": kcToolRef,
	"updatedinput": kcToolRef, "executeargs": kcToolRef,
	"executetoolname": kcToolRef | kcExecName,

	"method": kcMethod, "jsonrpc": kcJSONRPC, "id": kcID, "result": kcResult,
	"content": kcContent, "requestedschema": kcRequestedSchema,
	"elicitationid": kcElicitationID,

	"approvalrequest": kcApprovalObj, "permissionrequest": kcApprovalObj,
	"toolapprovalrequest": kcApprovalObj, "permissionprompt": kcApprovalObj,

	"permissionsuggestions": kcPermExtra, "acceptsettings": kcPermExtra,
	"updatedpermissions": kcPermExtra, "proposedexecpolicyamendment": kcPermExtra,
	"acceptforsession": kcPermExtra,

	"codexapprovalkind": kcCodexMarker,
}

// vocabWords are the fragments that make a key or a short value approval
// vocabulary for the _meta and namespaced-key rules.
var vocabWords = [][]byte{[]byte("approv"), []byte("permission"), []byte("consent"), []byte("elicit"), []byte("authoriz"), []byte("authoris")}

func containsAny(s []byte, subs [][]byte) bool {
	for _, x := range subs {
		if bytes.Contains(s, x) {
			return true
		}
	}
	return false
}

func has(s []byte, sub string) bool { return bytes.Contains(s, []byte(sub)) }

// classifyKey returns the roles of a decoded object key. norm is scratch
// space for the normalised key; mayBeVocab false skips the vocabulary
// checks for a key known to hold no stem.
func classifyKey(key []byte, norm []byte, mayBeVocab bool) keyClass {
	n := normKey(norm[:0], key, cap(norm))
	kc := keyClasses[string(n)]
	if mayBeVocab && containsAny(n, vocabWords) {
		kc |= kcVocab
	}
	if len(key) == 5 && bytes.EqualFold(key, []byte("_meta")) {
		kc |= kcMeta
	}
	if hasPrefixFold(key, "x-approval") || hasPrefixFold(key, "x_approval") {
		kc |= kcXApproval
	}
	return kc
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

// valueClass describes a short string value.
type valueClass uint32

const (
	vcGrant           valueClass = 1 << iota // approve, allow, accept, granted, ...
	vcStrongGrant                            // approved_for_session, acceptForSession, allow_always, ...
	vcAccept                                 // exactly "accept"
	vcTrue                                   // "true", "yes"
	vcPending                                // pending, requested, awaiting, ...
	vcApprovalPending                        // "approval-requested", "pending_approval", ...
	vcTypeApprovalReq
	vcTypeApprovalResp
	vcTypeApprovalGeneric
	vcTypeElicitReq
	vcTypeElicitRes
	vcMethodElicitCreate
	vcMethodApproval // approval, permission, elicitation, user-input methods
	vcMethodClient   // sampling/createMessage, roots/list
	vcVocab          // carries approval vocabulary at all
)

// grantValues are answers that give consent. Each contains a stem.
var grantValues = map[string]bool{
	"approve": true, "approved": true, "approveonce": true, "approvedonce": true,
	"allow": true, "allowed": true, "allowonce": true, "allowtool": true,
	"accept": true, "accepted": true, "acceptonce": true,
	"grant": true, "granted": true, "permit": true, "permitted": true,
	"confirm": true, "confirmed": true, "authorize": true, "authorized": true,
	"authorise": true, "authorised": true, "consent": true, "consented": true,
	"userapproved": true, "userallowed": true, "useraccepted": true,
}

// strongGrantValues only occur as answers to approval prompts: a decision
// with one of them is flagged even without a tool reference.
var strongGrantValues = map[string]bool{
	"approvedforsession": true, "approvedalways": true, "approvealways": true,
	"approveforsession": true, "allowalways": true, "allowforsession": true,
	"allowsession": true, "alwaysallow": true, "acceptforsession": true,
	"acceptwithexecpolicyamendment": true, "acceptalways": true,
	"approvedexecpolicyamendment": true, "allowandremember": true,
}

var pendingValues = map[string]bool{
	"pending": true, "requested": true, "required": true, "awaiting": true,
	"waiting": true, "open": true, "new": true, "prompt": true, "ask": true,
	"awaitinguser": true, "waitingforuser": true, "needsinput": true,
}

var (
	askWords    = [][]byte{[]byte("requir"), []byte("prompt"), []byte("need"), []byte("pending"), []byte("await"), []byte("ask")}
	answerWords = [][]byte{[]byte("response"), []byte("result"), []byte("decision"), []byte("granted"), []byte("reply"), []byte("answer"), []byte("responded"), []byte("approved"), []byte("denied")}
	// compoundRequests name review or change requests, not approval
	// requests: "request" preceded by one of them does not count.
	compoundRequests = []string{"pull", "merge", "review", "feature", "change"}
)

// hasRequest reports whether n contains "request" other than as part of
// "pullrequest", "mergerequest" and the like.
func hasRequest(n []byte) bool {
	for i := 0; ; {
		j := bytes.Index(n[i:], []byte("request"))
		if j < 0 {
			return false
		}
		j += i
		compound := false
		for _, c := range compoundRequests {
			if j >= len(c) && string(n[j-len(c):j]) == c {
				compound = true
				break
			}
		}
		if !compound {
			return true
		}
		i = j + 1
	}
}

// classifyValue returns the roles of a short decoded string value. norm is
// scratch space.
func classifyValue(v []byte, norm []byte) valueClass {
	if len(v) > 128 {
		return 0
	}
	n := normKey(norm[:0], v, cap(norm))
	var vc valueClass
	if grantValues[string(n)] {
		vc |= vcGrant
	}
	if strongGrantValues[string(n)] {
		vc |= vcGrant | vcStrongGrant
	}
	if string(n) == "accept" {
		vc |= vcAccept
	}
	if string(n) == "true" || string(n) == "yes" {
		vc |= vcTrue
	}
	if pendingValues[string(n)] || has(n, "pending") || has(n, "await") {
		vc |= vcPending
	}
	approvalish := has(n, "approv") || has(n, "permission")
	if approvalish || containsAny(n, vocabWords) {
		vc |= vcVocab
	}
	asks := hasRequest(n) || containsAny(n, askWords)
	switch {
	case approvalish && asks:
		vc |= vcApprovalPending | vcTypeApprovalReq
	case approvalish && containsAny(n, answerWords):
		vc |= vcTypeApprovalResp
	case string(n) == "approval" || string(n) == "permission" || string(n) == "toolapproval" || string(n) == "toolpermission":
		vc |= vcTypeApprovalGeneric
	}
	if has(n, "canusetool") {
		vc |= vcTypeApprovalReq
	}
	if has(n, "elicit") {
		if has(n, "result") || has(n, "response") || has(n, "answer") || has(n, "reply") {
			vc |= vcTypeElicitRes
		} else {
			vc |= vcTypeElicitReq
		}
	}
	// Method names: the exact MCP client methods, then vocabulary for the
	// host-specific ones (execCommandApproval,
	// item/commandExecution/requestApproval, session/request_permission,
	// mcpServer/elicitation/request, item/tool/requestUserInput, ...).
	switch {
	case bytes.EqualFold(v, []byte("elicitation/create")):
		vc |= vcMethodElicitCreate
	case bytes.EqualFold(v, []byte("sampling/createMessage")), bytes.EqualFold(v, []byte("roots/list")):
		vc |= vcMethodClient
	case approvalish || has(n, "elicit") || has(n, "requestuserinput"):
		vc |= vcMethodApproval
	}
	return vc
}

// objFeat is the set of facts gathered about one object from its direct
// members, plus what its children reported.
type objFeat uint64

const (
	ofTypeApprovalReq objFeat = 1 << iota
	ofTypeApprovalResp
	ofTypeApprovalGeneric
	ofTypeElicitReq
	ofTypeElicitRes
	ofDecisionGrant
	ofDecisionStrong
	ofStrongKeyGrant
	ofBehaviorGrant
	ofActionAccept
	ofActionGrant
	ofStatusGrant
	ofStatusApprovalPending
	ofStatusPending
	ofBoolGrant
	ofPendingFlag
	ofToolRef
	ofCallRef
	ofExecName
	ofMethodElicitCreate
	ofMethodApproval
	ofMethodClient
	ofJSONRPC
	ofID
	ofContent
	ofRequestedSchema
	ofElicitationID
	ofApprovalObjPending // an approval/approvalRequest member whose object is pending
	ofApprovalObjGrant   // an approval member whose object grants
	ofApprovalObjAny     // an approvalRequest/permissionRequest member holding an object
	ofPermExtra
	ofResultGrant // a "result" member whose object holds a bare grant decision
	ofOtherKey    // a member other than action/content/_meta
)

// slot names the member that set a feature, for the finding's path.
type slot uint8

const (
	slType slot = iota
	slDecision
	slBehavior
	slAction
	slStatus
	slBool
	slPending
	slExec
	slMethod
	slSchema
	slApproval
	slResult
	nSlots
)

// childReport is what a closed object tells its parent.
type childReport uint8

const (
	crPending childReport = 1 << iota // a pending status, or a pending flag
	crGrant                           // a bare grant (decision, approved: true, action accept, status approved)
)

// onMember records one member of an object. kc is the key's class, vc the
// value's (for strings), isTrue whether the value is the literal true, k the
// key's span.
func (f *frame) onMember(kc keyClass, vc valueClass, isTrue bool, k span) {
	set := func(feat objFeat, s slot) {
		if f.feat&feat == 0 {
			f.feat |= feat
			if f.slots[s].b == 0 {
				f.slots[s] = k
			}
		}
	}
	if kc&(kcAction|kcContent|kcMeta) == 0 {
		f.feat |= ofOtherKey
	}
	if kc&kcType != 0 {
		switch {
		case vc&vcTypeElicitReq != 0:
			set(ofTypeElicitReq, slType)
		case vc&vcTypeElicitRes != 0:
			set(ofTypeElicitRes, slType)
		case vc&vcTypeApprovalReq != 0:
			set(ofTypeApprovalReq, slType)
		case vc&vcTypeApprovalResp != 0:
			set(ofTypeApprovalResp, slType)
		case vc&vcTypeApprovalGeneric != 0:
			set(ofTypeApprovalGeneric, slType)
		}
	}
	if kc&kcDecision != 0 && vc&vcGrant != 0 {
		set(ofDecisionGrant, slDecision)
		if vc&vcStrongGrant != 0 {
			set(ofDecisionStrong, slDecision)
		}
	}
	if kc&kcStrongDecision != 0 && (vc&vcGrant != 0 || isTrue) {
		set(ofStrongKeyGrant, slDecision)
	}
	if kc&kcBehavior != 0 && vc&vcGrant != 0 {
		set(ofBehaviorGrant, slBehavior)
	}
	if kc&kcAction != 0 {
		if vc&vcAccept != 0 {
			set(ofActionAccept, slAction)
		} else if vc&vcGrant != 0 {
			set(ofActionGrant, slAction)
		}
	}
	if kc&kcStatus != 0 {
		switch {
		case vc&vcApprovalPending != 0:
			set(ofStatusApprovalPending, slStatus)
		case vc&vcGrant != 0:
			set(ofStatusGrant, slStatus)
		case vc&vcPending != 0:
			set(ofStatusPending, slStatus)
		}
	}
	if kc&kcBoolGrant != 0 && (isTrue || vc&vcTrue != 0) {
		set(ofBoolGrant, slBool)
	}
	if kc&kcPendingFlag != 0 && (isTrue || vc&vcTrue != 0) {
		set(ofPendingFlag, slPending)
	}
	if kc&kcToolRef != 0 {
		f.feat |= ofToolRef
	}
	if kc&kcCallRef != 0 {
		f.feat |= ofCallRef
	}
	if kc&kcExecName != 0 {
		set(ofExecName, slExec)
	}
	if kc&kcMethod != 0 {
		switch {
		case vc&vcMethodElicitCreate != 0:
			set(ofMethodElicitCreate, slMethod)
		case vc&vcMethodApproval != 0:
			set(ofMethodApproval, slMethod)
		case vc&vcMethodClient != 0:
			set(ofMethodClient, slMethod)
		}
	}
	if kc&kcJSONRPC != 0 {
		f.feat |= ofJSONRPC
	}
	if kc&kcID != 0 {
		f.feat |= ofID
	}
	if kc&kcContent != 0 {
		f.feat |= ofContent
	}
	if kc&kcRequestedSchema != 0 {
		set(ofRequestedSchema, slSchema)
	}
	if kc&kcElicitationID != 0 {
		set(ofElicitationID, slSchema)
	}
	if kc&kcPermExtra != 0 {
		f.feat |= ofPermExtra
	}
}

// onChild records what a closed child object reported to the member it is
// the value of.
func (f *frame) onChild(kc keyClass, rep childReport, isObj bool, k span) {
	set := func(feat objFeat, s slot) {
		if f.feat&feat == 0 {
			f.feat |= feat
			f.slots[s] = k
		}
	}
	if kc&kcApprovalObj != 0 && isObj {
		switch {
		case rep&crPending != 0:
			set(ofApprovalObjPending, slApproval)
		case rep&crGrant != 0:
			set(ofApprovalObjGrant, slApproval)
		}
		if kc&kcBoolGrant == 0 { // approvalRequest, permissionRequest, ...
			set(ofApprovalObjAny, slApproval)
		}
	}
	if kc&kcResult != 0 && rep&crGrant != 0 {
		set(ofResultGrant, slResult)
	}
	if kc&kcRequestedSchema != 0 {
		set(ofRequestedSchema, slSchema)
	}
	if kc&kcToolRef != 0 {
		f.feat |= ofToolRef
	}
	if kc&kcContent != 0 {
		f.feat |= ofContent
	}
	if kc&kcPermExtra != 0 {
		f.feat |= ofPermExtra
	}
	if kc&(kcAction|kcContent|kcMeta) == 0 {
		f.feat |= ofOtherKey
	}
}

// verdict is the outcome of the object rules: a kind, the slot of the
// member to name in the path, and a detail.
type verdict struct {
	kind   string
	slot   slot
	detail string
}

// judge applies the object rules to an object's features. root says the
// object is the root of InspectElicitation's input, which is itself an
// elicitation request and so exempt from that one rule.
func (f *frame) judge(elicitRoot bool) (verdict, bool) {
	ft := f.feat
	has := func(x objFeat) bool { return ft&x != 0 }
	ref := has(ofToolRef)
	switch {
	case has(ofMethodElicitCreate):
		return verdict{KindElicitationRequest, slMethod, "JSON-RPC elicitation/create request"}, true
	case has(ofMethodApproval):
		return verdict{KindJSONRPCApprovalMethod, slMethod, "JSON-RPC message of an approval, permission or elicitation method"}, true
	case has(ofMethodClient):
		return verdict{KindJSONRPCApprovalMethod, slMethod, "JSON-RPC message of a client method (sampling/createMessage or roots/list)"}, true
	case has(ofTypeElicitReq):
		return verdict{KindElicitationRequest, slType, "object typed as an elicitation request"}, true
	case has(ofTypeElicitRes):
		return verdict{KindElicitationResult, slType, "object typed as an elicitation result"}, true
	case has(ofTypeApprovalReq):
		return verdict{KindApprovalRequest, slType, "object typed as an approval or permission request"}, true
	case has(ofTypeApprovalResp):
		return verdict{KindApprovalDecision, slType, "object typed as an approval or permission response"}, true
	case has(ofTypeApprovalGeneric) && ref:
		return verdict{KindApprovalRequest, slType, "approval object naming a tool or call"}, true
	case (has(ofRequestedSchema) || has(ofElicitationID)) && !elicitRoot:
		return verdict{KindElicitationRequest, slSchema, "elicitation request (requestedSchema or elicitationId)"}, true
	case has(ofActionAccept) && (has(ofContent) || !has(ofOtherKey)):
		return verdict{KindElicitationResult, slAction, `elicitation result with action "accept"`}, true
	case has(ofActionGrant) && ref:
		return verdict{KindApprovalDecision, slAction, "approve/allow action naming a tool or call"}, true
	case has(ofStrongKeyGrant):
		return verdict{KindApprovalDecision, slDecision, "permission decision that allows"}, true
	case has(ofBehaviorGrant) && (ref || has(ofPermExtra)):
		return verdict{KindApprovalDecision, slBehavior, `permission answer with behavior "allow" and tool input`}, true
	case has(ofDecisionStrong):
		return verdict{KindApprovalDecision, slDecision, "approval decision for the session or always"}, true
	case has(ofDecisionGrant) && (ref || has(ofPermExtra)):
		return verdict{KindApprovalDecision, slDecision, "approve/accept decision naming a tool or call"}, true
	case has(ofBoolGrant) && has(ofCallRef):
		return verdict{KindApprovalRecord, slBool, "approval record for a call"}, true
	case has(ofBoolGrant) && ref:
		return verdict{KindApprovalDecision, slBool, "approval flag set for a tool"}, true
	case has(ofStatusGrant) && ref:
		return verdict{KindApprovalRecord, slStatus, "approved status for a tool or call"}, true
	case has(ofStatusApprovalPending):
		return verdict{KindApprovalRequest, slStatus, "status says an approval is requested"}, true
	case has(ofPendingFlag) && ref:
		return verdict{KindApprovalRequest, slPending, "tool call flagged as needing approval"}, true
	case has(ofApprovalObjPending):
		return verdict{KindApprovalRequest, slApproval, "pending approval"}, true
	case has(ofApprovalObjGrant) && ref:
		return verdict{KindApprovalRecord, slApproval, "granted approval for a tool or call"}, true
	case has(ofApprovalObjAny):
		return verdict{KindApprovalRequest, slApproval, "approval or permission request object"}, true
	case has(ofExecName):
		return verdict{KindApprovalRequest, slExec, "approval request naming the tool to execute"}, true
	case has(ofResultGrant) && (has(ofID) || has(ofJSONRPC)):
		return verdict{KindApprovalDecision, slResult, "JSON-RPC response carrying an approval decision"}, true
	}
	return verdict{}, false
}

// report is what this object tells its parent.
func (f *frame) report() childReport {
	var r childReport
	if f.feat&(ofStatusPending|ofStatusApprovalPending|ofPendingFlag) != 0 {
		r |= crPending
	}
	if f.feat&(ofDecisionGrant|ofBoolGrant|ofActionAccept|ofActionGrant|ofStatusGrant|ofBehaviorGrant|ofStrongKeyGrant) != 0 {
		r |= crGrant
	}
	return r
}
