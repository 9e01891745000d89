package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/audit"
	"github.com/mcp-gate/mcp-gate/catalogcache"
	"github.com/mcp-gate/mcp-gate/elicitation"
	"github.com/mcp-gate/mcp-gate/guard"
	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/naming"
	"github.com/mcp-gate/mcp-gate/pins"
	"github.com/mcp-gate/mcp-gate/policy"
	"github.com/mcp-gate/mcp-gate/protocol"
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
	// UpstreamStall is how long an upstream may leave part of a message
	// unfinished before it is failed (upstream.DefaultReadStall if 0).
	UpstreamStall time.Duration
	// MaxMessageBytes bounds one message in either direction.
	MaxMessageBytes int
	// ProbeUnpinned: stdio upstreams without a "protocol" pin are probed
	// for their era (upstream.PoolOptions.ProbeUnpinned).
	ProbeUnpinned bool
	// PageSize is the gate's own page size for lists (DefaultPageSize if 0).
	PageSize int
	// Policy holds the policy in force (the embedded default when nil).
	Policy *policy.Store
	Logger *slog.Logger
	Audit  *audit.Logger
	// Approver asks the human when the policy says ask; nil means the
	// channels the policy chooses (elicitation.Channels): the host's MCP
	// elicitation, or LocalApprover.
	Approver elicitation.Approver
	// LocalApprover is the local approval surface (package approvals);
	// nil means the gate runs none.
	LocalApprover elicitation.Approver
	// Observer is told of decisions, approvals, calls, guard refusals,
	// sessions and upstream lives, for metrics; nil costs nothing (observe.go).
	Observer Observer
	// Trouble, when not nil, reports what keeps the gate from serving
	// everything, read at every request (trouble.go).
	Trouble func() Trouble
	// CatalogCache, when set, seeds each key's catalog with the servers'
	// last catalogs, so listing starts nothing (persist.go).
	CatalogCache *catalogcache.Store
	// Pins, when set, holds every definition to its pin (pinning.go).
	Pins *pins.Store
}

// A Gate is what the host sessions of one process share: the policy, the
// upstream pool (keyed by poolKey), the catalog snapshots (one per key)
// and the audit log. It aggregates the
// upstream servers' tools, prompts and resources under host-safe names;
// each host connection is a Session (session.go), which answers its host's
// initialize itself and relays everything else between its host and the
// upstream that owns it. The stdio command is one Session (Gate.Serve).
type Gate struct {
	// Set at construction.
	opts   Options
	budget int
	log    *slog.Logger
	audit  *audit.Logger
	pool   *upstream.Pool
	id     string // names the gate in audit lines for shared work (listing)

	policy  *policy.Store
	seq     atomic.Uint64 // decision IDs
	noGuard atomic.Bool   // benchmarks only: measure the relay without the result guard

	// The catalogs: what each kind is and its lister (fixed); what the
	// upstreams listed is in cats, one immutable snapshot per pool key.
	tools, prompts catalog
	resLister      *lister
	empty          *snapshot // the catalog of a key with none

	mu       sync.Mutex                 // guards the listers' state and what follows
	sessions map[string]*Session        // by id
	cats     map[string]*keyCatalog     // pool key → its catalog, while a session has the key
	upCaps   map[string]json.RawMessage // pool key → the capabilities its children are started with
	upScope  map[string]string          // pool key → its catalog cache scope, when not "" (Session.cacheScope)
	upLevel  map[string]json.RawMessage // pool key → the last logging/setLevel params of its sessions
	inflight map[child]map[*Session]int // child → sessions with requests to it in flight
	// spareInflight are emptied maps of inflight, reused so that a call
	// to an idle child allocates none (enter).
	spareInflight []map[*Session]int

	known   knownCaps  // each server's capabilities, once a child of it started (advertise.go)
	answers answerBook // the host's elicitation answers, by call in flight (elicited.go)
	// startFailed: child → why its last start for a list failed
	// (trouble.go). Guarded by mu.
	startFailed map[child]error
	// listFailed: child → why its last list fetch failed, nil entries
	// removed (trouble.go). Guarded by mu.
	listFailed map[child]error
	persist    persistState // the catalog cache and the pins (persist.go)
	// personalPins: changed definitions team users approved for
	// themselves (pinning.go).
	personalPins personalPins
	// rounds mints and redeems the requestStates of approvals asked of
	// 2026-07-28 hosts (era_ask.go).
	rounds *elicitation.Rounds
	parked parkedTable // 2026-07-28 calls waiting on their host's answer to an upstream's question (parked.go)
}

// hostInfo is what the host said about itself in initialize.
type hostInfo struct {
	initialized     bool
	protocolVersion string
	capsForUpstream json.RawMessage // the host's elicitation, sampling and roots capabilities, compacted
	poolKey         string          // names the session's upstream children (poolKey)
	elicitForm      bool
	elicitURL       bool
	client          string // clientInfo.name, which picks approval.hosts (policy.ApprovalVia)
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
		opts:     opts,
		budget:   budget,
		log:      opts.Logger,
		audit:    opts.Audit,
		policy:   opts.Policy,
		id:       newSessionID(),
		sessions: map[string]*Session{},
		cats:     map[string]*keyCatalog{},
		upCaps:   map[string]json.RawMessage{},
		upScope:  map[string]string{},
		upLevel:  map[string]json.RawMessage{},
		inflight: map[child]map[*Session]int{},
		persist:  persistState{written: map[string][32]byte{}},
		rounds:   elicitation.NewRounds(),
	}
	g.empty = emptySnapshot(budget)
	g.tools = catalog{kind: kindTool}
	g.prompts = catalog{kind: kindPrompt}
	g.tools.lister = g.namedLister(&g.tools)
	g.prompts.lister = g.namedLister(&g.prompts)
	g.resLister = g.resourceLister()
	g.pool = upstream.NewPool(opts.Servers, upstream.PoolOptions{
		Launcher:        opts.Launcher,
		Logger:          opts.Logger,
		StartTimeout:    opts.StartTimeout,
		IdleTimeout:     opts.IdleTimeout,
		MaxMessageBytes: opts.MaxMessageBytes,
		ReadStall:       opts.UpstreamStall,
		InitParams:      g.upstreamInitParams,
		Era:             g.upstreamEra,
		ProbeUnpinned:   opts.ProbeUnpinned,
		Handler: func(key, server string) rpc.Handler {
			return &upstreamHandler{g: g, key: key, server: server}
		},
		OnStart: g.upstreamStarted,
		OnExit:  g.upstreamExited,
		// A key's children start only while a session has the key
		// (initialize opens it, releaseKey stops it): a handler or a list
		// fetch that outlives the key's last session starts nothing.
		OpenKeysOnly: true,
	})
	return g, nil
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hostHandler serves one session's host.
type hostHandler struct{ g *Session }

// HandleCall serves one host request. An error refusing it before any
// policy decision is marked where it was made (refusedAs) and written to
// the audit log here, the one place every request's answer passes
// (refused.go); an answered request costs the nil check.
func (h hostHandler) HandleCall(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	res, err := h.serve(ctx, req)
	if err != nil {
		err = h.g.auditRefused(req.Method, err)
	}
	return res, err
}

func (h hostHandler) serve(ctx context.Context, req *rpc.Message) (json.RawMessage, error) {
	g := h.g
	if err := checkHostParams(req.Method, req.Params); err != nil {
		return nil, refusedAs(refusedAmbiguous, "", err)
	}
	if g.servesModern(req) {
		return g.serveModern(ctx, req) // a 2026-07-28 host (era.go)
	}
	m, ok := hostMethods[req.Method]
	if !ok {
		return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method %s is not supported by mcp-gate", guard.Quote(req.Method, guard.ShowName))
	}
	if !m.beforeInit && !g.hostCaps().initialized {
		return nil, refusedAs(refusedNotInitialized, "", rpc.Errorf(rpc.CodeInvalidRequest, "%s before initialize: the session must start with an initialize request", req.Method))
	}
	return g.serveMethod(ctx, m, req.Method, req.Params)
}

// serveMethod serves one host request of either era once its framing is
// read (initialize, or a 2026-07-28 request's _meta envelope): what the
// gate cannot serve (trouble.go) refuses it, its results count against the
// session's budget (backpressure.go), and a list whose servers did not
// start says so (afterList). Both eras come through here, so neither can
// miss a check the other has.
func (g *Session) serveMethod(ctx context.Context, m hostMethod, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := g.refuseInTrouble(method); err != nil {
		return nil, refusedAs(refusedUnavailable, "", err)
	}
	h := g.holdResults(ctx)
	defer g.release(h)
	ctx = h
	res, err := m.serve(g, ctx, params)
	return g.afterList(ctx, method, res, err)
}

// hostMethod is how the gate serves one request from the host.
type hostMethod struct {
	beforeInit bool // served before initialize (initialize itself, ping)
	serve      func(g *Session, ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	relay      *relay // the pipeline's row, for a method that reaches an upstream
}

// relayed serves a method through the pipeline.
func relayed(r *relay) hostMethod {
	return hostMethod{relay: r, serve: func(g *Session, ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		return g.runRelayed(ctx, r, params) // relayline.go
	}}
}

// hostMethods is every request the host may send, and how it is served:
// the gate answers some itself, and every one that reaches an upstream is
// a relay through the pipeline. Anything else is refused as unknown. The
// pipeline table test reads this map, so a method added here without a row
// fails it.
var hostMethods = map[string]hostMethod{
	"initialize": {beforeInit: true, serve: func(g *Session, _ context.Context, p json.RawMessage) (json.RawMessage, error) {
		return g.initialize(p)
	}},
	"ping": {beforeInit: true, serve: func(*Session, context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage("{}"), nil
	}},
	"tools/list":               {serve: (*Session).listTools},
	"prompts/list":             {serve: (*Session).listPrompts},
	"resources/list":           {serve: (*Session).listResources},
	"resources/templates/list": {serve: (*Session).listResourceTemplates},
	"logging/setLevel": {serve: func(g *Session, _ context.Context, p json.RawMessage) (json.RawMessage, error) {
		return g.setLogLevel(p)
	}},
	"tools/call":            relayed(relayToolCall),
	"prompts/get":           relayed(relayPromptGet),
	"resources/read":        relayed(relayResourceRead),
	"resources/subscribe":   relayed(relaySubscribe),
	"resources/unsubscribe": relayed(relayUnsubscribe),
	"completion/complete":   relayed(relayComplete),
}

// hostNotifications is every notification the gate acts on from the
// host; others are dropped.
var hostNotifications = map[string]func(g *Session, msg *rpc.Message){
	"notifications/initialized": func(g *Session, _ *rpc.Message) { g.reportTrouble() },
	"notifications/roots/list_changed": func(g *Session, msg *rpc.Message) {
		// The session's children (it has its own when it declared roots)
		// that care will ask for roots again, and their request comes here.
		// Each on its own goroutine: this runs on the host's read loop, and
		// an upstream that stopped reading must not stall the host.
		running := g.pool.RunningFor(g.childKey())
		if g.hostCaps().roots {
			// Its shared children are its own too: its key names its session.
			running = append(running, g.pool.RunningFor(sharedKeyOf(g.childKey()))...)
		}
		for _, s := range running {
			go func() { _ = s.Notify(msg.Method, msg.Params) }()
		}
	},
}

func (h hostHandler) HandleNotification(msg *rpc.Message) {
	g := h.g
	if err := checkHostParams(msg.Method, msg.Params); err != nil {
		// A notification has no answer: drop it, as the gate drops any
		// message it will not relay.
		g.log.Warn("host notification with ambiguous params dropped", "method", rpc.LogMethod(msg.Method), "offset", keyErrorOffset(err))
		return
	}
	if serve, ok := hostNotifications[msg.Method]; ok {
		serve(g, msg)
		return
	}
	g.log.Debug("host notification ignored", "method", rpc.LogMethod(msg.Method))
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
func (g *Session) initialize(params json.RawMessage) (json.RawMessage, error) {
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
	if err := checkInitialize(params); err != nil {
		return nil, err
	}
	if g.hostCaps().initialized {
		// Initialize is served on the host's read loop (Sequential), so
		// two cannot race here. A second one would move the session to
		// other children while its calls are in flight.
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "initialize: already initialized; an MCP session initializes once (a host that needs other capabilities starts a new session)")
	}
	version := p.ProtocolVersion
	if !slices.Contains(protocol.Known(), version) {
		// MCP: answer with the latest version we support; the host decides.
		version = protocol.Latest
	}
	caps, _ := rawjson.Get(params, "capabilities")
	forUp := upstreamFacing(caps) // compacted: poolKey compares the bytes
	key := poolKey(g.identity, forUp, p.Capabilities.Roots != nil, g.session)
	seed := g.seedCatalog(forUp, g.cacheScope())
	for server, raw := range seed.capabilities {
		if c, err := upstream.ParseCapabilities(raw); err == nil {
			g.known.noteCached(server, c)
		}
	}
	info := &hostInfo{
		initialized:     true,
		protocolVersion: version,
		capsForUpstream: forUp,
		poolKey:         key,
		sampling:        p.Capabilities.Sampling != nil,
		roots:           p.Capabilities.Roots != nil,
		client:          clientName(params),
	}
	if e := p.Capabilities.Elicitation; e != nil {
		// An empty elicitation object means form mode (2025-11-25 keeps the
		// older meaning for compatibility).
		info.elicitForm = e.Form != nil || e.URL == nil
		info.elicitURL = e.URL != nil
	}
	g.mu.Lock()
	g.hostInfo.Store(info)
	g.mu.Unlock()
	g.joinKey(key, forUp, seed.snap)
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    g.advertised(),
		"serverInfo":      map[string]any{"name": "mcp-gate", "version": Version},
		"instructions":    g.instructions() + g.relayedInstructions(key, seed.instructions),
	}
	return json.Marshal(res)
}

// joinKey makes key the session's children: started with exactly forUp
// as their capabilities, and shared only with sessions of the same
// identity that declared the same (poolKey). Each upstream request still
// reads the capabilities of the session it is for. A key's first session
// seeds its catalog (seed: from the catalog cache, persist.go).
func (g *Session) joinKey(key string, forUp json.RawMessage, seed *snapshot) {
	g.Gate.mu.Lock()
	defer g.Gate.mu.Unlock()
	g.upCaps[key] = forUp
	if scope := g.cacheScope(); scope != "" {
		g.upScope[key] = scope
	}
	g.pool.OpenKey(key) // under Gate.mu, as releaseKey's StopKey is
	if g.Gate.anyShared() {
		g.upCaps[sharedKeyOf(key)] = forUp
		g.pool.OpenKey(sharedKeyOf(key))
	}
	if g.cats[key] == nil {
		c := &keyCatalog{}
		c.snap.Store(seed)
		g.cats[key] = c
	}
}

// instructions is what the gate tells a host about itself, in either era.
func (g *Gate) instructions() string {
	return fmt.Sprintf("mcp-gate relays the tools of these MCP servers: %v. "+
		"A tool's name starts with its server's name and two underscores. "+
		"Every call is checked against a policy; a refused call returns an error that says why.", g.pool.Names()) +
		g.troubleInstructions()
}

// hostCaps is what the host declared in initialize, read afresh for every
// request that depends on it; the zero hostInfo before. Never nil; the
// caller must not change it.
func (g *Session) hostCaps() *hostInfo {
	if h := g.hostInfo.Load(); h != nil {
		return h
	}
	return &noHostInfo
}

// noHostInfo is a session's hostInfo before the host opened it.
var noHostInfo hostInfo

// upstreamInitParams builds the initialize request for a child of key: the
// elicitation, sampling and roots capabilities of its sessions' hosts, so
// that servers which register tools only for capable clients do so (issue
// #2), and no child is told of a capability its sessions lack.
func (g *Gate) upstreamInitParams(key, _ string) json.RawMessage {
	g.mu.Lock()
	caps := g.upCaps[key]
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
	g.observeUpstreamStart(s)
	g.known.note(s.Name, s.Caps)
	g.mu.Lock()
	level := g.upLevel[s.Key]
	g.mu.Unlock()
	if level != nil && s.Caps.Logging {
		if _, err := s.Call(context.Background(), "logging/setLevel", level); err != nil {
			g.log.Warn("setting upstream log level", "server", s.Name, "error", err)
		}
	}
	g.refreshAfterRestart(s)
}

// setLogLevel records the session's level, by which the gate filters the
// upstreams' log messages for it, and passes it on to the session's
// children, which are shared by the sessions of its key: they send at the
// level last set by any of them.
func (g *Session) setLogLevel(params json.RawMessage) (json.RawMessage, error) {
	level, ok := rawjson.GetString(params, "level")
	if !ok {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, `logging/setLevel needs a "level" string`)
	}
	g.mu.Lock()
	g.logLevel = level
	g.mu.Unlock()
	key := g.childKey()
	g.Gate.mu.Lock()
	g.upLevel[key] = params
	if g.Gate.anyShared() {
		g.upLevel[sharedKeyOf(key)] = params
	}
	g.Gate.mu.Unlock()
	for _, s := range append(g.pool.RunningFor(key), g.pool.RunningFor(sharedKeyOf(key))...) {
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

// notifyHost sends a notification to the session's host, logging a
// failure.
func (g *Session) notifyHost(method string, params json.RawMessage) {
	// Never waited for: this may run on an upstream's read loop, which
	// other sessions share, and a host that is not reading must not stall
	// it (backpressure.go). A notification finding no room is dropped.
	if g.era.modern.Load() && !modernNotifies(method) {
		return // era.go
	}
	ok, err := g.host.TryNotify(method, params)
	var tl *rpc.TooLargeError
	switch {
	case errors.As(err, &tl):
		g.log.Warn("notification to the host dropped", "method", rpc.LogMethod(method), "bytes", tl.Size, "error", err)
	case err != nil || !ok:
		g.log.Debug("notification to the host dropped", "method", method, "queued", ok, "error", err)
	}
}

// upstreamError turns a failure to reach an upstream into a JSON-RPC error
// for the host. Errors the upstream itself returned pass through with their
// code, and with hidden characters in their message and data made visible:
// hosts show error messages to the user.
func upstreamError(server, method string, err error) error {
	var ir *upstream.InputRequiredError
	if errors.As(err, &ir) {
		return err // questions for the host, not an error (era_upstream.go)
	}
	var werr *rpc.Error
	if errors.As(err, &werr) {
		return &upstreamRPCError{e: neutralError(werr), orig: werr}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	// The gate's report of the failure can carry the upstream's own words:
	// the tail of its stderr when it dies or fails to start. Hosts show
	// the message to the model as the call's outcome, so it is neutralised
	// and, as an upstream's error, guarded (guardError).
	orig := &rpc.Error{
		Code:    rpc.CodeInternalError,
		Message: fmt.Sprintf("%s: %v", method, err),
		Data:    mustJSON(map[string]string{"server": server}),
	}
	return &upstreamRPCError{e: neutralError(orig), orig: orig}
}

// neutralError is an upstream's error object with hidden characters in its
// message and data made visible.
func neutralError(werr *rpc.Error) *rpc.Error {
	if werr.Raw != nil {
		if e, ok := neutralRawError(werr); ok {
			return e
		}
	}
	msg, n := guard.Neutralize(werr.Message)
	data, m, derr := guard.NeutralizeJSON(werr.Data)
	if derr != nil {
		data, m = nil, 1 // data it cannot pass whole is left out
	}
	if n+m == 0 && werr.Raw == nil {
		return werr
	}
	return &rpc.Error{Code: werr.Code, Message: msg, Data: data}
}

// upstreamRPCError is an error object an upstream answered a relayed
// request with, neutralised (e), and as the upstream wrote it (orig), which
// the pipeline's guard reads (guardError): hosts show an error's message
// to the model as the call's outcome, as they show a result.
type upstreamRPCError struct {
	e, orig *rpc.Error
}

func (u *upstreamRPCError) Error() string { return u.e.Error() }
func (u *upstreamRPCError) Unwrap() error { return u.e }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
