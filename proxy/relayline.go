package proxy

import (
	"context"
	"encoding/json"

	"github.com/mcp-gate/mcp-gate/rpc"
)

// runRelayed serves a host's request through the pipeline (relayed), and
// tells the host's Conn, when the answer is an upstream's result passed
// on untouched, that nothing of it is kept here: the line it was read
// from may then be reused once the host has it (rpc.ReleaseAfterWrite,
// rpc/linepool.go). That is the one release of a line buffer, so what
// refers to the result at this point, and why none of it outlives the
// return, is written down here; whoever adds a holder on this path must
// drop the call or keep a copy.
//
// For a 2025-era host (modernOf(ctx) == nil), the result res was
// received by rpc.Conn.CallAdmit (upstream.Session.CallAdmit, for a
// 2026-07-28 upstream after modernResult, which returns res or a copy
// without resultType) under this request's context, in forwardWithin,
// through forward and forwardRounds (whose earlier rounds' answers went
// to the upstream as retry params, copies, and are not res). Then:
//   - run's guard (guardResult, guardOther, guardAck) read it: the scan,
//     the inspection and the neutraliser (its goroutine beside the
//     detector is joined before guardResult returns) keep no slice of it;
//     findings, audit records and log attributes are strings, copies;
//     a rewritten or refused result is new bytes, and then res is not
//     what is returned and nothing is released;
//   - endCall and the observer get the server, method and error only;
//   - the elicitation answers (answers.begin/end) hold the host's answers,
//     not the result; the progress token's route is released on return;
//   - serveMethod's result hold counts bytes, afterList passes a non-list
//     result through, hostHandler.HandleCall returns it to the Conn.
//
// Nothing on this path parks, stores or caches a result: tasks are
// stripped (tasks.go), catalog lists go through the listers (not here),
// and parked calls, which keep results for a retry, exist only for a
// 2026-07-28 host, whose results are also rewritten (stampComplete):
// those are not released.
func (g *Session) runRelayed(ctx context.Context, r *relay, params json.RawMessage) (json.RawMessage, error) {
	res, err := g.run(ctx, r, "", params)
	if err == nil && modernOf(ctx) == nil {
		rpc.ReleaseAfterWrite(ctx, res)
	}
	return res, err
}
