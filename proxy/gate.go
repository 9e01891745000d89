package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/rpc"
	"github.com/mcp-gate/mcp-gate/upstream"
)

// Version is reported to hosts and upstreams; the command sets it at build.
var Version = "dev"

// DefaultPageSize is how many entries one list page carries. Large enough
// that hosts which ignore nextCursor still see every tool of any realistic
// setup; the gate paginates only past it.
const DefaultPageSize = 1000

// Options configure a Gate.
type Options struct {
	// Name is the name the host gives the gate (default "gate"); it sets the
	// wire-name budget, since hosts prefix tool names with mcp__<name>__.
	Name    string
	Servers []upstream.Config
	// Launcher starts upstream processes (upstream.ExecLauncher in production).
	Launcher     upstream.Launcher
	StartTimeout time.Duration
	// ListTimeout bounds listing one server's tools, prompts or resources
	// (DefaultListTimeout if 0), so one that never answers delays a list
	// and hides nothing else.
	ListTimeout time.Duration
	IdleTimeout time.Duration
	// MaxMessageBytes bounds one message in either direction.
	MaxMessageBytes int
	// PageSize is the gate's own page size for lists (DefaultPageSize if 0).
	PageSize int
	// Policy holds the policy in force (the embedded default when nil).
	Policy *policy.Store
	Logger *slog.Logger
	Audit  *audit.Logger
}

// A Gate serves one host session: it answers the host's initialize itself,
// aggregates the upstream servers' tools, prompts and resources under
// host-safe names, and relays everything else between the host and the
// upstream that owns it.
type Gate struct {
	// Set at construction.
	opts    Options
	budget  int
	log     *slog.Logger
	audit   *audit.Logger
	pool    *upstream.Pool
	session string // identifies this host session in the audit log

	host            *rpc.Conn // set by Serve before the first message is read
	policy          *policy.Store
	progress        progressRoutes
	grants          elicitation.Grants // "approve for this session" answers
	urlElicitations urlElicitations
	seq             atomic.Uint64 // decision IDs
	noGuard         atomic.Bool   // benchmarks only: measure the relay without the result guard

	mu           sync.Mutex // guards hostInfo and the catalogs
	hostInfo     hostInfo
	tools        catalog
	prompts      catalog
	resources    resourceIndex
	logLevel     json.RawMessage // the host's last logging/setLevel params
	listedByHost map[string]bool // lists the host has fetched, so list_changed is worth sending
}

// hostInfo is what the host said about itself in initialize.
type hostInfo struct {
	initialized     bool
	protocolVersion string
	capsForUpstream json.RawMessage // the host's elicitation, sampling and roots capabilities
	elicitForm      bool
	elicitURL       bool
	sampling        bool
	roots           bool
}

// New returns a Gate. It validates the names against the wire-name budget
// but starts nothing.
func New(opts Options) (*Gate, error) {
	if opts.Name == "" {
		opts.Name = "gate"
	}
	if err := naming.ValidateGateName(opts.Name); err != nil {
		return nil, err
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = DefaultListTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Audit == nil {
		opts.Audit = audit.Discard()
	}
	if opts.Policy == nil {
		opts.Policy = policy.NewStatic(policy.Default())
	}
	budget := naming.Budget(opts.Name)
	for _, s := range opts.Servers {
		if err := naming.ValidateServerKey(s.Name, budget); err != nil {
			return nil, fmt.Errorf("server %q: %w", s.Name, err)
		}
	}
	g := &Gate{
		opts:         opts,
		budget:       budget,
		log:          opts.Logger,
		audit:        opts.Audit,
		policy:       opts.Policy,
		session:      newSessionID(),
		listedByHost: map[string]bool{},
	}
	g.tools = newCatalog(kindTool, budget)
	g.prompts = newCatalog(kindPrompt, budget)
	g.resources = newResourceIndex()
	g.tools.lister = g.namedLister(&g.tools)
	g.prompts.lister = g.namedLister(&g.prompts)
	g.resources.lister = g.resourceLister()
	g.grants.Reset(opts.Policy.Current().Revision())
	g.progress.routes = map[string]progressRoute{}
	g.pool = upstream.NewPool(opts.Servers, upstream.PoolOptions{
		Launcher:        opts.Launcher,
		Logger:          opts.Logger,
		StartTimeout:    opts.StartTimeout,
		IdleTimeout:     opts.IdleTimeout,
		MaxMessageBytes: opts.MaxMessageBytes,
		InitParams:      g.upstreamInitParams,
		Handler:         func(server string) rpc.Handler { return &upstreamHandler{g: g, server: server} },
		OnStart:         g.upstreamStarted,
	})
	return g, nil
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Serve runs the host session over r and w until the host closes its end or
// ctx is done, then stops every upstream. It returns nil when the host ended
// the session normally.
func (g *Gate) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	g.host = rpc.New(r, w, nil, hostHandler{g}, rpc.Options{
		Peer:            "host",
		Logger:          g.log,
		MaxMessageBytes: g.opts.MaxMessageBytes,
		AnswerBadInput:  true,
		Sequential:      func(method string) bool { return method == "initialize" },
		// A host that sends a request and closes stdin (a script, a pipe)
		// still gets its answer; MCP hosts close stdin to shut down and
		// send SIGTERM if they will not wait.
		Drain: 30 * time.Second,
	})
	pol := g.policy.Current()
	g.log.Info("host session started", "session", g.session, "servers", g.pool.Names(), "policy", pol.Source(), "revision", pol.Revision())
	err := g.host.Run(ctx)
	g.pool.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		err = nil
	}
	g.log.Info("host session ended", "session", g.session)
	return err
}

// hostHandler serves the host's messages.
type hostHandler struct{ g *Gate }

func (h hostHandler) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	g := h.g
	if err := checkHostParams(req.Method, req.Params); err != nil {
		return nil, err
	}
	switch req.Method {
	case "initialize":
		return g.initialize(req.Params)
	case "ping":
		return json.RawMessage("{}"), nil
	}
	g.mu.Lock()
	initialized := g.hostInfo.initialized
	g.mu.Unlock()
	if !initialized {
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%s before initialize: the session must start with an initialize request", req.Method)
	}
	switch req.Method {
	case "tools/list":
		return g.listTools(ctx, req.Params)
	case "tools/call":
		return g.callTool(ctx, req.Params)
	case "prompts/list":
		return g.listPrompts(ctx, req.Params)
	case "prompts/get":
		return g.getPrompt(ctx, req.Params)
	case "resources/list":
		return g.listResources(ctx, req.Params)
	case "resources/templates/list":
		return g.listResourceTemplates(ctx, req.Params)
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return g.resourceRequest(ctx, req.Method, req.Params)
	case "completion/complete":
		return g.guardCompletion(g.complete(ctx, req.Params))
	case "logging/setLevel":
		return g.setLogLevel(req.Params)
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method %q is not supported by mcp-gate", req.Method)
}

func (h hostHandler) HandleNotification(msg *rpc.Message) {
	g := h.g
	if err := checkHostParams(msg.Method, msg.Params); err != nil {
		// A notification has no answer: drop it, as the gate drops any
		// message it will not relay.
		g.log.Warn("host notification with ambiguous params dropped", "method", rpc.LogMethod(msg.Method), "offset", keyErrorOffset(err))
		return
	}
	switch msg.Method {
	case "notifications/initialized":
	case "notifications/roots/list_changed":
		// Upstreams that care will ask for roots again; each asks the host.
		// Each on its own goroutine: this runs on the host's read loop, and
		// an upstream that stopped reading must not stall the host.
		for _, s := range g.pool.Running() {
			go func() { _ = s.Notify(msg.Method, msg.Params) }()
		}
	default:
		g.log.Debug("host notification ignored", "method", rpc.LogMethod(msg.Method))
	}
}

// checkHostParams refuses params in which any object, at any depth, has
// the same key twice or two keys equal under case folding ("uri" and
// "URI"). Parsers disagree on which copy wins and some match keys without
// regard to case, so the gate could decide on one reading while an upstream
// acts on the other. Checked here, where every host message arrives, so
// that no method can be forgotten: tools/call and prompts/get as much as
// resources/read, subscriptions, completion/complete, logging and
// initialize (whose capabilities reach the upstreams). The error names the
// keys and their position, never a value.
func checkHostParams(method string, params json.RawMessage) error {
	if len(params) == 0 {
		return nil
	}
	err := rawjson.UniqueKeys(params)
	if err == nil {
		return checkSpelling(method, params)
	}
	var ke *rawjson.KeyError
	if errors.As(err, &ke) {
		return &rpc.Error{
			Code: rpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s: params: %v; mcp-gate refuses a request that JSON parsers can read in two ways, "+
				"since the gate could decide on one reading and the server act on the other", method, err),
			Data: mustJSON(map[string]any{"position": ke.Pointer(), "offset": ke.Offset}),
		}
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "%s: params: %v", method, err)
}

// keyErrorOffset is where a duplicate key was found, for logs, which carry
// positions and never the message's own bytes; -1 for a syntax error.
func keyErrorOffset(err error) int {
	var ke *rawjson.KeyError
	if errors.As(err, &ke) {
		return ke.Offset
	}
	return -1
}

// keyErrorDetail describes an ambiguous-keys error for an audit or log
// line: where, never which key, since keys are the message's own bytes.
func keyErrorDetail(err error) string {
	if off := keyErrorOffset(err); off >= 0 {
		return fmt.Sprintf("duplicate or case-variant key at byte %d", off)
	}
	return "params are not valid JSON"
}

// initialize answers the host itself: the gate is the host's server, and
// the upstreams are not even running yet.
func (g *Gate) initialize(params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Elicitation *struct {
				Form *json.RawMessage `json:"form"`
				URL  *json.RawMessage `json:"url"`
			} `json:"elicitation"`
			Sampling *json.RawMessage `json:"sampling"`
			Roots    *json.RawMessage `json:"roots"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "initialize: %v", err)
	}
	version := p.ProtocolVersion
	if !slices.Contains(upstream.KnownProtocolVersions, version) {
		// MCP: answer with the latest version we support; the host decides.
		version = upstream.KnownProtocolVersions[0]
	}
	caps, _ := rawjson.Get(params, "capabilities")
	forUp := []byte("{}")
	for _, k := range []string{"elicitation", "sampling", "roots"} {
		if v, ok := rawjson.Get(caps, k); ok {
			forUp, _ = rawjson.Set(forUp, k, v)
		}
	}
	g.mu.Lock()
	g.hostInfo = hostInfo{
		initialized:     true,
		protocolVersion: version,
		capsForUpstream: forUp,
		sampling:        p.Capabilities.Sampling != nil,
		roots:           p.Capabilities.Roots != nil,
	}
	if e := p.Capabilities.Elicitation; e != nil {
		// An empty elicitation object means form mode (2025-11-25 keeps the
		// older meaning for compatibility).
		g.hostInfo.elicitForm = e.Form != nil || e.URL == nil
		g.hostInfo.elicitURL = e.URL != nil
	}
	g.mu.Unlock()
	res := map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{
			"tools":       map[string]any{"listChanged": true},
			"prompts":     map[string]any{"listChanged": true},
			"resources":   map[string]any{"listChanged": true, "subscribe": true},
			"completions": map[string]any{},
			"logging":     map[string]any{},
		},
		"serverInfo": map[string]any{"name": "mcp-gate", "version": Version},
		"instructions": fmt.Sprintf("mcp-gate relays the tools of these MCP servers: %v. "+
			"A tool's name starts with its server's name and two underscores. "+
			"Every call is checked against a policy; a refused call returns an error that says why.", g.pool.Names()),
	}
	return json.Marshal(res)
}

// upstreamInitParams builds the initialize request for an upstream: the
// host's own elicitation, sampling and roots capabilities, so that servers
// which register tools only for capable clients do so (issue #2).
func (g *Gate) upstreamInitParams(string) json.RawMessage {
	g.mu.Lock()
	caps := g.hostInfo.capsForUpstream
	g.mu.Unlock()
	if caps == nil {
		caps = json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]any{
		"protocolVersion": upstream.ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "mcp-gate", "version": Version},
	})
	return b
}

// upstreamStarted brings a newly started upstream up to date: the host's log
// level, and a fresh look at its lists if the host has seen them (a restart
// may have changed them).
func (g *Gate) upstreamStarted(s *upstream.Session) {
	g.mu.Lock()
	level := g.logLevel
	g.mu.Unlock()
	if level != nil && s.Caps.Logging {
		if _, err := s.Call(context.Background(), "logging/setLevel", level); err != nil {
			g.log.Warn("setting upstream log level", "server", s.Name, "error", err)
		}
	}
	g.refreshAfterRestart(s)
}

func (g *Gate) setLogLevel(params json.RawMessage) (json.RawMessage, error) {
	if _, ok := rawjson.GetString(params, "level"); !ok {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, `logging/setLevel needs a "level" string`)
	}
	g.mu.Lock()
	g.logLevel = params
	g.mu.Unlock()
	for _, s := range g.pool.Running() {
		if s.Caps.Logging {
			go func() {
				if _, err := s.Call(context.Background(), "logging/setLevel", params); err != nil {
					g.log.Warn("setting upstream log level", "server", s.Name, "error", err)
				}
			}()
		}
	}
	return json.RawMessage("{}"), nil
}

// notifyHost sends a notification to the host, logging a failure.
func (g *Gate) notifyHost(method string, params json.RawMessage) {
	if err := g.host.Notify(context.Background(), method, params); err != nil {
		g.log.Debug("notifying host", "method", method, "error", err)
	}
}

// upstreamError turns a failure to reach an upstream into a JSON-RPC error
// for the host. Errors the upstream itself returned pass through with their
// code, and with hidden characters in their message and data made visible:
// hosts show error messages to the user.
func upstreamError(server, method string, err error) error {
	var werr *rpc.Error
	if errors.As(err, &werr) {
		msg, n := guard.Neutralize(werr.Message)
		data, m, derr := guard.NeutralizeJSON(werr.Data)
		if derr != nil {
			data, m = nil, 1 // data it cannot pass whole is left out
		}
		if n+m == 0 {
			return werr
		}
		return &rpc.Error{Code: werr.Code, Message: msg, Data: data}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &rpc.Error{
		Code:    rpc.CodeInternalError,
		Message: fmt.Sprintf("%s: %v", method, err),
		Data:    mustJSON(map[string]string{"server": server}),
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
