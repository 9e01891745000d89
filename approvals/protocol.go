package approvals

import "time"

// The protocol on a gate's socket: the client writes one request, a JSON
// object on one line; the gate answers with one Reply line, and for watch
// keeps writing Event lines until either side closes. Lines are at most
// maxLine bytes; unknown fields are refused.
//
//	{"op":"list"}
//	{"op":"approve","id":"<id>","scope":"once"|"session"}
//	{"op":"deny","id":"<id>"}
//	{"op":"watch"}

// Request is one client request.
type Request struct {
	Op    string `json:"op"`
	ID    string `json:"id,omitempty"`
	Scope string `json:"scope,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	OK        bool       `json:"ok"`
	Error     string     `json:"error,omitempty"`
	Questions []Question `json:"questions,omitempty"`
}

// Event is what watch streams after its Reply: a question asked, or one
// closed (answered, timed out or withdrawn).
type Event struct {
	Event    string    `json:"event"` // "asked" or "closed"
	Question *Question `json:"question,omitempty"`
	ID       string    `json:"id,omitempty"`
	Outcome  string    `json:"outcome,omitempty"`
}

// Question is one pending question as the surface shows it. Message is
// exactly the text of the elicitation form (elicitation.Message): every
// value from an upstream or the model in it is quoted, neutralised and
// bounded, so it can be shown as is.
type Question struct {
	ID         string    `json:"id"`
	GatePID    int       `json:"gate_pid"`
	Session    string    `json:"session"`
	Client     string    `json:"client,omitempty"` // the host's clientInfo name, quoted
	User       string    `json:"user,omitempty"`   // the team user whose call it is, quoted; "" for the gate's own user
	Server     string    `json:"server"`           // quoted like the message's values
	Tool       string    `json:"tool"`
	Rule       string    `json:"rule"`
	ArgsDigest string    `json:"args_digest"`
	Message    string    `json:"message"`
	Asked      time.Time `json:"asked"`
	Expires    time.Time `json:"expires"`
}

const maxLine = 1 << 20
