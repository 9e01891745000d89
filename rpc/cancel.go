package rpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// PeerCancelled is why a call the peer made was given up: the peer's own
// notifications/cancelled, whose params (its reason, and whatever else it
// wrote) a relay passes on when it cancels the request it made on the
// call's behalf. It is a context.Canceled.
type PeerCancelled struct {
	Params json.RawMessage // as the peer sent them
}

func (e *PeerCancelled) Error() string {
	if r, ok := rawjson.GetString(e.Params, "reason"); ok && r != "" {
		return "cancelled by the peer: " + r
	}
	return "cancelled by the peer"
}

func (e *PeerCancelled) Unwrap() error { return context.Canceled }

// cancelParams is the params of the cancellation of our request id: the
// peer's cancellation with its requestId made ours, when that is what
// ended the call (its reason and other members kept, byte for byte), else
// the cause as the reason.
func cancelParams(id json.RawMessage, cause error) (json.RawMessage, error) {
	var pc *PeerCancelled
	if errors.As(cause, &pc) && len(pc.Params) > 0 && pc.Params[0] == '{' {
		if p, err := rawjson.Set(pc.Params, "requestId", id); err == nil {
			return p, nil
		}
	}
	reason := ""
	if cause != nil {
		reason = cause.Error()
	}
	return json.Marshal(struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason,omitempty"`
	}{id, reason})
}
