// Package approvals is the gate's local approval surface: a human reachable
// where the host cannot ask. Each gate listens on a unix socket in a
// per-user runtime directory (RuntimeDir, mode 0700, owned by the user);
// a Surface is an elicitation.Approver whose questions wait there, up to
// the approval timeout, for an answer from `mcp-gate approvals` (list,
// approve, deny, watch) or its loopback web page.
//
// The rules are the elicitation's: a question is bound to one call (the
// gate forwards the bytes it held while asking, and decides again under the
// policy in force once the human answers), and anything but an explicit
// yes is a no.
//
// The model must not approve its own calls. Its tools run as the same user
// as the human, so the socket's permissions alone cannot tell them apart.
// The surface therefore refuses every request (list, watch and answers
// alike, so that a question's id never reaches the model) from a peer that
// is not the same uid, that descends from the gate or from the host that
// started it, or that shares the host's login session (SO_PEERCRED and
// /proc ancestry, peer_linux.go). The model's refusals never carry a
// question's id or the command that answers it.
//
// The protocol is one JSON object per line each way (protocol.go).
package approvals
