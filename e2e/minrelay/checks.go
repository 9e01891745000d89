package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// checks is the work issue 9 asks of the gate on an allowed tool call,
// done by the gate's own packages in the thinnest relay around them
// (-checks): every request decoded and its keys checked, decided by the
// policy, its decision written to the audit log (an HMAC of its
// arguments, one write for the burst) before the burst is forwarded, its
// name renamed; every response decoded and its result guarded. What it
// leaves out is what the gate's structure costs beyond that work: its
// goroutines and hand-offs, its own upstream ids, cancellation, stall
// protection, sessions, progress routes and the like. e2e/bench measures
// it as the floor relay go-checks, so that the gate's CPU per call splits
// into what the checks cost on the machine and what the rest costs.
//
// It is a measuring instrument, not a gate: what the policy does not
// allow is forwarded all the same (the bench allows every call it makes),
// and a result the guard refuses is counted on stderr, not withheld.
type checks struct {
	pol     *policy.Policy
	strip   string
	log     *audit.Logger // writes to records
	record  bytes.Buffer  // the burst's records, written before it is forwarded
	audit   *os.File
	n       int
	flagged int
}

func newChecks(policyPath, auditPath, strip string) (*checks, error) {
	pol, _, err := policy.LoadFile(policyPath, policy.Options{})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(auditPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	c := &checks{pol: pol, strip: strip, audit: f}
	c.log = audit.New(&c.record)
	return c, nil
}

// requests checks, decides, records and renames the tools/call requests of
// one burst of whole lines, appending the lines to forward to out. The
// burst's records are written before it returns.
func (c *checks) requests(out, whole []byte) ([]byte, error) {
	for line := range bytes.Lines(whole) {
		msg, err := rpc.Decode(body(line))
		if err != nil || msg.Method != "tools/call" {
			out = append(out, line...)
			continue
		}
		if err := rawjson.UniqueKeys(msg.Params); err != nil {
			return nil, fmt.Errorf("request params: %w", err)
		}
		name, _ := rawjson.GetString(msg.Params, "name")
		args, _ := rawjson.Get(msg.Params, "arguments")
		tool := name
		if len(name) > len(c.strip) && name[:len(c.strip)] == c.strip {
			tool = name[len(c.strip):]
		}
		d := c.pol.Decide(policy.Call{Kind: policy.KindTool, Server: "echo", Name: tool, Args: args})
		c.n++
		if err := c.log.Decision(audit.Decision{
			ID: strconv.Itoa(c.n), Kind: "tool", Server: "echo", Tool: tool, WireName: name,
			Verdict: d.Verdict.String(), Rule: d.Rule, Reason: d.Reason, Revision: d.Revision,
			ArgsDigest: audit.Digest(args),
		}); err != nil {
			return nil, err
		}
		params, err := rawjson.Set(msg.Params, "name", rawjson.AppendString(nil, tool))
		if err != nil {
			return nil, err
		}
		msg.Params = params
		enc, err := rpc.EncodeMessage(msg)
		if err != nil {
			return nil, err
		}
		out = append(append(out, enc...), '\n')
	}
	if c.record.Len() > 0 {
		if _, err := c.audit.Write(c.record.Bytes()); err != nil {
			return nil, err
		}
		c.record.Reset()
	}
	return out, nil
}

// responses guards the results of one burst of whole lines, appending them
// to out as they came.
func (c *checks) responses(out, whole []byte) ([]byte, error) {
	for line := range bytes.Lines(whole) {
		if msg, err := rpc.Decode(body(line)); err == nil && msg.Result != nil {
			if sc := guard.ScanResult(msg.Result); !sc.Clean() && len(guard.InspectScanned(msg.Result, sc)) > 0 {
				c.flagged++
			}
		}
		out = append(out, line...)
	}
	return out, nil
}

// body is a line without its end: Decode rewrites the line breaks in what
// it reads to spaces.
func body(line []byte) []byte { return bytes.TrimSuffix(line, []byte("\n")) }
