package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/protocol"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// ProtocolVersion is the MCP version the gate asks upstreams for. Pinning it
// makes go-sdk-based and TypeScript servers skip discovery probes and keeps
// behaviour reproducible (DESIGN.md §7).
const ProtocolVersion = protocol.Latest

// Capabilities is what an upstream declared in its initialize result.
type Capabilities struct {
	Tools, ToolsListChanged         bool
	Prompts, PromptsListChanged     bool
	Resources, ResourcesListChanged bool
	ResourcesSubscribe              bool
	Completions, Logging            bool
}

// A Session is one running, initialised upstream. Its methods are safe for
// concurrent use. A Session is never restarted: when its process exits the
// Pool makes a new one.
type Session struct {
	// Set at construction.
	Name            string
	Key             string // the caller key the pool started it for
	ProtocolVersion string
	Caps            Capabilities
	InitResult      json.RawMessage // the raw initialize result
	conn            *rpc.Conn
	up              Connection
	started         time.Time

	// Restart says this child replaces one of the same server and key
	// that crashed (for metrics: a start is not always a restart). Set
	// before OnStart is called.
	Restart bool

	// envelope, for a server pinned to 2026-07-28, is the _meta members
	// every request to it carries (era.go); nil for the older era.
	envelope json.RawMessage
	// probing is set while an unpinned server's server/discover probe is
	// pending (era.go, probe): the connection ending then is the probe's
	// doing, and the start is retried in the older era.
	probing atomic.Bool

	inflight   atomic.Int64 // calls in either direction
	lastUsed   atomic.Int64 // unix nanoseconds
	deliberate atomic.Bool  // the gate stopped it; its end is not a crash
}

// Call sends a request to the upstream. An error from the upstream is
// returned as *rpc.Error, unchanged; a dead upstream gives an error that
// names it and says how it died.
func (s *Session) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return s.CallAdmit(ctx, method, params, nil)
}

// CallAdmit is Call with a say over the result as soon as it is read
// (rpc.Conn.CallAdmit): the proxy's per-session result budget.
func (s *Session) CallAdmit(ctx context.Context, method string, params json.RawMessage, admit func(size int) error) (json.RawMessage, error) {
	s.begin()
	defer s.end()
	if s.envelope != nil {
		var err error
		if params, err = s.modernParams(method, params, clientCapabilitiesOf(ctx)); err != nil { // era.go
			return nil, err
		}
	}
	res, err := s.conn.CallAdmit(ctx, method, params, admit)
	if err == nil && s.envelope != nil {
		return s.modernResult(method, res)
	}
	if err != nil && errors.Is(err, rpc.ErrClosed) {
		return nil, &rpc.Error{
			Code:    rpc.CodeInternalError,
			Message: fmt.Sprintf("upstream %q is not available for %s: %v", s.Name, method, s.conn.Cause()),
		}
	}
	return res, err
}

// Notify sends a notification to the upstream.
func (s *Session) Notify(method string, params json.RawMessage) error {
	s.lastUsed.Store(time.Now().UnixNano())
	return s.conn.Notify(context.Background(), method, params)
}

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// Err says why the session ended.
func (s *Session) Err() error { return s.conn.Cause() }

func (s *Session) begin() {
	s.inflight.Add(1)
	s.lastUsed.Store(time.Now().UnixNano())
}

func (s *Session) end() {
	s.lastUsed.Store(time.Now().UnixNano())
	s.inflight.Add(-1)
}

func (s *Session) idleFor(now time.Time) time.Duration {
	if s.inflight.Load() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, s.lastUsed.Load()))
}

// countingHandler counts the upstream's own requests (an elicitation waiting
// for a human) as activity, so an idle timer never stops a server mid-question.
type countingHandler struct {
	s *Session
	h rpc.Handler
}

func (c countingHandler) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	c.s.begin()
	defer c.s.end()
	return c.h.HandleCall(ctx, req)
}

func (c countingHandler) HandleNotification(msg *rpc.Message) { c.h.HandleNotification(msg) }

// ParseCapabilities reads a server's declared capabilities (the
// capabilities member of its initialize result): from a live handshake, or
// from a catalog cache entry that recorded one.
func ParseCapabilities(raw json.RawMessage) (Capabilities, error) {
	var c capsOnWire
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &c); err != nil {
			return Capabilities{}, fmt.Errorf("the capabilities are not an object of capabilities: %w", rpc.DescribeJSONError(err))
		}
	}
	return c.caps(), nil
}

// capsOnWire is the server capabilities object, as far as the gate reads
// it (an initialize result, a server/discover result, a cache entry).
type capsOnWire struct {
	Tools *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Prompts *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"prompts"`
	Resources *struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	} `json:"resources"`
	Completions *struct{} `json:"completions"`
	Logging     *struct{} `json:"logging"`
}

func (c capsOnWire) caps() Capabilities {
	return Capabilities{
		Tools:                c.Tools != nil,
		ToolsListChanged:     c.Tools != nil && c.Tools.ListChanged,
		Prompts:              c.Prompts != nil,
		PromptsListChanged:   c.Prompts != nil && c.Prompts.ListChanged,
		Resources:            c.Resources != nil,
		ResourcesListChanged: c.Resources != nil && c.Resources.ListChanged,
		ResourcesSubscribe:   c.Resources != nil && c.Resources.Subscribe,
		Completions:          c.Completions != nil,
		Logging:              c.Logging != nil,
	}
}

// versionShape is what an MCP protocol version looks like. It is compiled
// on first need, a server answering with a version the gate does not know.
var versionShape = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`) })

// initialize performs the MCP handshake on a new connection.
func (s *Session) initialize(ctx context.Context, params json.RawMessage) error {
	res, err := s.conn.Call(ctx, "initialize", params)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return s.initialized(ctx, res)
}

// initialized takes res as the server's initialize result and completes the
// handshake.
func (s *Session) initialized(ctx context.Context, res json.RawMessage) error {
	var r struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("initialize: the result is not an initialize result: %w", rpc.DescribeJSONError(err))
	}
	if !slices.Contains(protocol.Known(), r.ProtocolVersion) {
		// Described, not quoted, when it is not even shaped like one: the
		// string is the server's to choose, and this error is logged.
		v := strconv.Quote(r.ProtocolVersion)
		if !versionShape().MatchString(r.ProtocolVersion) {
			v = audit.PayloadString(r.ProtocolVersion)
		}
		return fmt.Errorf("initialize: the server answered with protocol version %s; the gate speaks %v", v, protocol.Known())
	}
	caps, err := ParseCapabilities(r.Capabilities)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	s.ProtocolVersion = r.ProtocolVersion
	s.InitResult = res
	s.Caps = caps
	return s.conn.Notify(ctx, "notifications/initialized", nil)
}

// Route passes the inner handler's routing on (rpc.Router): the proxy ties
// an upstream's request to the host call in flight when it arrived.
func (c countingHandler) Route(ctx context.Context, req *rpc.Message) context.Context {
	if r, ok := c.h.(rpc.Router); ok {
		return r.Route(ctx, req)
	}
	return ctx
}
