package main

import (
	"log/slog"

	"github.com/mcp-gate/mcp-gate/approvals"
	"github.com/mcp-gate/mcp-gate/elicitation"
)

// startLocalApprovals opens the gate's local approval surface. A surface
// that cannot open is logged and left off: the questions it would carry
// are then refused (fail closed), and the gate still serves.
func startLocalApprovals(on bool, log *slog.Logger) *approvals.Surface {
	if !on {
		return nil
	}
	s, err := approvals.Listen("", log)
	if err != nil {
		log.Warn("local approvals are off; asks the host cannot carry will be refused", "err", err)
		return nil
	}
	s.Notify = notifyDesktop
	log.Debug("local approval surface listening", "socket", s.Path())
	return s
}

// localApprover keeps a nil surface a nil interface.
func localApprover(s *approvals.Surface) elicitation.Approver {
	if s == nil {
		return nil
	}
	return s
}
