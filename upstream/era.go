package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
	"github.com/mcp-gate/mcp-gate/protocol"
	"github.com/mcp-gate/mcp-gate/rpc"
)

// Upstreams of revision 2026-07-28. A server whose entry pins
// "protocol": "2026-07-28" is opened with server/discover instead of
// initialize, and every request to it carries the per-request _meta
// envelope: the protocol version, and the same client capabilities and
// client info the older era would have declared once in initialize (the
// capabilities of the child's pool key, never more). Results come back
// marked complete; resultType is taken off, since the rest of the gate
// speaks the older era's shapes (a 2026-07-28 host gets it stamped again).
// An upstream's input-required result comes back as *InputRequiredError,
// for the proxy to put its questions to the host (proxy/era_upstream.go);
// the gate never acts on the upstream's requestState, only echoes it.
//
// Servers without the key are opened with initialize, and with
// server/discover only if initialize is refused (initFirst, when the pool
// has ProbeUnpinned, as the serve command does): a server of the older era
// or of both eras is spoken to at 2025-11-25, where it can send sampling,
// elicitation and roots requests and list changes; only a modern-only
// server at 2026-07-28, which is remembered (PoolOptions.Era: the catalog
// cache; or this pool), so that its next start opens with the probe.
// "protocol": "auto" has the gate probe with server/discover first (probe),
// unless it remembers the era from an earlier start: a server remembered
// as the older era is opened with initialize at once, so the probe's cost
// (a round trip, or ProbeTimeout for a server that never answers a request
// before initialize) is paid once per server entry. A probed server whose
// discover lists a revision of the older era too is started again at that
// era (preferOlder, startPreferring).

// ModernVersion is the 2026-07-28 revision.
const ModernVersion = "2026-07-28"

// parseProtocol reads an entry's "protocol": a revision the gate speaks.
// Any of the older era's pins the older era (as no key does); 2026-07-28
// the new one. Anything else is an error naming the key and the choices.
func parseProtocol(raw json.RawMessage, bad func(string, ...any)) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	choices := append([]string{ProtocolAuto, ModernVersion}, protocol.Known()...)
	var s string
	if t[0] != '"' || json.Unmarshal(t, &s) != nil {
		bad(`"protocol" is %s; expected one of %q`, jsonKind(t), choices)
		return ""
	}
	switch {
	case s == ModernVersion, s == ProtocolAuto, slices.Contains(protocol.Known(), s):
		// An older revision is kept too: it pins the older era, where
		// no key lets the gate probe.
		return s
	}
	bad(`"protocol" %q is not a revision mcp-gate speaks; expected one of %q`, s, choices)
	return ""
}

// ProtocolAuto ("protocol": "auto") asks the gate to find the server's era
// by probing it (probe).
const ProtocolAuto = "auto"

// ProbeTimeout bounds the server/discover probe of an unpinned server: a
// server of the older era may never answer a request before initialize.
// Servers that answer (with method not found, "before initialize", or any
// other error) are classified at once; only a silent one waits this long,
// and only once, since the result is remembered. Where the gate can see
// the child's unread input (Linux), it is counted from when the server
// read the probe, so that a slow start is not taken for silence
// (probeContext).
var ProbeTimeout = 5 * time.Second

// startEra is the era to open cfg's child of key in: the entry's pin; for
// "protocol": "auto", the era remembered for the server (this pool's last
// start of it, else PoolOptions.Era), a modern one still opened by probing
// so that a server that changed back is found, or a probe when nothing is
// remembered.
func (p *Pool) startEra(key string, cfg Config) string {
	unpinned := cfg.Protocol == "" && p.opts.ProbeUnpinned && cfg.URL == ""
	if cfg.Protocol != ProtocolAuto && !unpinned {
		return cfg.Protocol
	}
	p.mu.Lock()
	v := p.eras[cfg.Name]
	p.mu.Unlock()
	if v == "" && p.opts.Era != nil {
		v = p.opts.Era(key, cfg)
	}
	switch {
	case v != "" && v != ModernVersion:
		return ""
	case unpinned && v == "":
		return initFirst
	}
	return probeDefault
}

// initFirst is how an unpinned stdio server is opened when nothing is
// remembered of it (PoolOptions.ProbeUnpinned): initialize first, and
// server/discover on the same connection only if initialize is refused.
// A server of either era or both (the go-sdk's, the TypeScript SDK's)
// answers initialize and is spoken to at 2025-11-25, where it can ask the
// host (sampling, elicitation, roots) and announce list changes, which the
// gate relays to hosts of both eras; only a server that refuses it and
// answers discover (modern only) is spoken to at 2026-07-28, which is
// remembered, so that its next start opens with the probe. Servers of the
// older era see exactly what they saw before: no probe, no cost. (The
// probe first would have found the SDKs' servers modern, and they refuse
// an initialize after a discover on the same connection: a second launch.)
const initFirst = "\x00init-first"

// probeDefault is the probe startEra asks for: a discover result naming
// no revision the gate speaks also means the older era.
const probeDefault = "\x00probe"

// noteEra remembers how cfg's server was last opened, or, after a probe
// the server ended the connection over (some older servers exit on an
// unknown first request), that it is of the older era: its next start
// skips the probe.
func (p *Pool) noteEra(cfg Config, s *Session, err error) {
	v := ""
	switch {
	case err == nil:
		v = s.ProtocolVersion
	case errors.Is(err, errProbeEnded):
		v = ProtocolVersion
		p.log.Warn(`upstream ended the connection on the server/discover probe; it is started at the older protocol from now on (pin "protocol": "2025-11-25" in its entry to skip the probe)`, "server", cfg.Name)
	}
	if v == "" {
		return
	}
	p.mu.Lock()
	p.eras[cfg.Name] = v
	p.mu.Unlock()
}

// errProbeEnded: the server ended the connection while server/discover was
// pending.
var errProbeEnded = errors.New("the server ended the connection on the server/discover probe")

// handshake opens the connection in the era the entry pins, or finds it.
func (s *Session) handshake(ctx context.Context, era string, initParams json.RawMessage) error {
	switch era {
	case ModernVersion:
		return s.discover(ctx, initParams)
	case ProtocolAuto, probeDefault:
		return s.probe(ctx, initParams, era == probeDefault)
	case initFirst:
		err := s.initialize(ctx, initParams)
		var refused *rpc.Error
		if err == nil || ctx.Err() != nil || !errors.As(err, &refused) {
			return err // opened; or the connection or the result failed, not the revision
		}
		select {
		case <-s.conn.Done():
			return err
		default:
		}
		// Refused: a modern-only server answers discover. Bounded as the
		// probe is, so that a server that refuses initialize and then
		// says nothing fails as soon as before, give or take ProbeTimeout.
		dctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		derr := s.discover(dctx, initParams)
		cancel()
		if derr == nil {
			return nil
		}
		return err
	}
	return s.initialize(ctx, initParams)
}

// probe classifies a server as the spec's stdio rules say: it is sent
// server/discover first; a discover result, or an error only the new era
// defines (-32022 unsupported version, with the versions it supports), means
// modern; anything else (method not found, "before initialize", garbage, no
// answer within ProbeTimeout) means the older era, which is then opened
// with initialize on the same connection. A modern server that supports no
// revision the gate speaks is an error saying so.
func (s *Session) probe(ctx context.Context, initParams json.RawMessage, lenient bool) error {
	s.probing.Store(true)
	pctx, cancel := s.probeContext(ctx) // ProbeTimeout from when the server read it
	err := s.discover(pctx, initParams)
	cancel()
	if err != nil {
		select {
		case <-s.conn.Done():
			return fmt.Errorf("%w: %w", errProbeEnded, err)
		default:
		}
	}
	s.probing.Store(false)
	if err == nil {
		return s.preferOlder()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *rpc.Error
	if errors.As(err, &re) && re.Code == codeUnsupportedVersion {
		return fmt.Errorf("the server speaks protocol 2026-07-28 or later but not %s: %w", ModernVersion, err)
	}
	var ia *initAnswerError
	if lenient && errors.As(err, &ia) {
		// A server that answers any first request as initialize: the
		// older era, already opened.
		return s.initialized(ctx, ia.res)
	}
	if (errors.Is(err, errNotModernVersion) || ia != nil) && !lenient {
		return err
	}
	return s.initialize(ctx, initParams)
}

// preferOlder: a server the probe found modern whose discover result also
// lists a revision of the older era the gate speaks (a server of both
// eras, as the go-sdk's) is to be spoken to at that older era: there it
// can send sampling, elicitation and roots requests, and list changes,
// which the gate relays to hosts of both eras, and which it cannot send at
// 2026-07-28 (the gate opens no subscriptions/listen upstream). The SDKs
// refuse an initialize after a discover on the same connection (the
// go-sdk's "duplicate initialize"), so the start ends with errBothEras and
// the server is started again with initialize (startPreferring); the era
// is remembered, so that is paid once per server entry.
func (s *Session) preferOlder() error {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(s.InitResult, &r) == nil && slices.ContainsFunc(r.SupportedVersions, func(v string) bool {
		return v != ModernVersion && slices.Contains(protocol.Known(), v)
	}) {
		return errBothEras
	}
	return nil
}

// errBothEras: the probe found a server of both eras.
var errBothEras = errors.New("the server speaks both protocol eras; it is started again at the older one")

// startPreferring starts cfg's child of key in the era startEra picks, and
// a server of both eras again at the older one.
func (p *Pool) startPreferring(key string, cfg Config) (*Session, error) {
	s, err := p.start(key, cfg, p.startEra(key, cfg))
	if errors.Is(err, errBothEras) {
		p.log.Info("upstream speaks both protocol eras; starting it again at the older one, where it can ask the host and announce list changes", "server", cfg.Name, "key", key)
		s, err = p.start(key, cfg, "")
	}
	return s, err
}

// codeUnsupportedVersion is the new era's -32022.
const codeUnsupportedVersion = -32022

var errNotModernVersion = errors.New("the server lists other revisions")

// initAnswerError is a discover answered with an initialize result (a
// protocolVersion, no supportedVersions): a server that takes any first
// request for initialize.
type initAnswerError struct{ res json.RawMessage }

func (e *initAnswerError) Error() string {
	return "server/discover: the server answered with an initialize result"
}

// discover opens a 2026-07-28 server: server/discover with the envelope
// built from what initialize would have said.
func (s *Session) discover(ctx context.Context, initParams json.RawMessage) error {
	caps, ok := rawjson.Get(initParams, "capabilities")
	if !ok || len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage("{}")
	}
	info, ok := rawjson.Get(initParams, "clientInfo")
	if !ok || len(info) == 0 || info[0] != '{' {
		info = json.RawMessage(`{"name":"mcp-gate","version":"dev"}`)
	}
	env := []byte(`{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `"}`)
	env, _ = rawjson.Set(env, "io.modelcontextprotocol/clientCapabilities", caps)
	env, _ = rawjson.Set(env, "io.modelcontextprotocol/clientInfo", info)
	res, err := s.conn.Call(ctx, "server/discover", append(append([]byte(`{"_meta":`), env...), '}'))
	if err != nil {
		return fmt.Errorf("server/discover (protocol %s): %w", ModernVersion, err)
	}
	var r struct {
		SupportedVersions []string   `json:"supportedVersions"`
		Capabilities      capsOnWire `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("server/discover: the result is not a discover result: %w", rpc.DescribeJSONError(err))
	}
	if r.SupportedVersions == nil {
		if _, ok := rawjson.Get(res, "protocolVersion"); ok {
			return &initAnswerError{res}
		}
	}
	if !slices.Contains(r.SupportedVersions, ModernVersion) {
		return fmt.Errorf("server/discover: %w (%d), not %s", errNotModernVersion, len(r.SupportedVersions), ModernVersion)
	}
	s.ProtocolVersion = ModernVersion
	s.InitResult = res
	s.Caps = r.Capabilities.caps()
	s.envelope = env
	return nil
}

// capsKey carries the client capabilities one request declares upstream.
type capsKey struct{}

// WithClientCapabilities makes the 2026-07-28 requests made under ctx
// declare caps as their client's capabilities, in place of those the
// child's pool key declared at discover: a request of that era carries
// its own declaration, so an upstream can be told exactly what the host's
// request declared (and the gate relays), never more and never less. caps
// must be a JSON object. A 2025 upstream learned its capabilities at
// initialize and is not affected.
//
// A caller that knows its session is of the older era (Modern) need not
// add the layer.
func WithClientCapabilities(ctx context.Context, caps json.RawMessage) context.Context {
	return context.WithValue(ctx, capsKey{}, caps)
}

// Modern says whether s speaks revision 2026-07-28, whose requests carry
// their client's capabilities (WithClientCapabilities).
func (s *Session) Modern() bool { return s.envelope != nil }

func clientCapabilitiesOf(ctx context.Context) json.RawMessage {
	caps, _ := ctx.Value(capsKey{}).(json.RawMessage)
	return caps
}

// modernParams puts the envelope into a request's _meta, keeping any
// other member the params carry (a progress token); caps, when not nil,
// replaces the envelope's client capabilities for this request.
func (s *Session) modernParams(method string, params json.RawMessage, caps json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		params = json.RawMessage("{}")
	}
	meta, ok := rawjson.Get(params, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		// No _meta of the caller's, as most requests: the envelope is
		// written out in one buffer, the bytes of setting its members in
		// turn on {} (its keys are unique: discover wrote them).
		meta = make([]byte, 0, len(s.envelope)+len(caps)+8)
		meta = append(meta, '{')
		_ = rawjson.Members(s.envelope, func(m rawjson.Member) bool {
			v := m.Value
			if caps != nil && m.Key == "io.modelcontextprotocol/clientCapabilities" {
				v = caps
			}
			if len(meta) > 1 {
				meta = append(meta, ',')
			}
			meta = rawjson.AppendString(meta, m.Key)
			meta = append(meta, ':')
			meta = append(meta, v...)
			return true
		})
		meta = append(meta, '}')
		out, err := rawjson.Set(params, "_meta", meta)
		if err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s to upstream %q: params: %v", method, s.Name, err)
		}
		return out, nil
	}
	var err error
	_ = rawjson.Members(s.envelope, func(m rawjson.Member) bool {
		v := m.Value
		if caps != nil && m.Key == "io.modelcontextprotocol/clientCapabilities" {
			v = caps
		}
		meta, err = rawjson.Set(meta, m.Key, v)
		return err == nil
	})
	if err == nil {
		params, err = rawjson.Set(params, "_meta", meta)
	}
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s to upstream %q: params: %v", method, s.Name, err)
	}
	return params, nil
}

// inputRequiredMethods may answer input_required.
var inputRequiredMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// InputRequiredError is a 2026-07-28 upstream's input-required result:
// not an answer, but questions (Result's inputRequests) the caller must
// put to the host before retrying with the answers and the upstream's
// requestState echoed. The gate never reads that state.
type InputRequiredError struct {
	Server, Method string
	Result         json.RawMessage
}

func (e *InputRequiredError) Error() string {
	return fmt.Sprintf("upstream %q answered %s with an input-required result", e.Server, e.Method)
}

// modernResult takes resultType off a complete result, returns an
// input-required one as *InputRequiredError, and refuses any other kind.
func (s *Session) modernResult(method string, res json.RawMessage) (json.RawMessage, error) {
	rt, ok := rawjson.Get(res, "resultType")
	if !ok {
		return res, nil
	}
	switch v, _ := rawjson.String(rt); {
	case v == "input_required" && inputRequiredMethods[method]:
		return nil, &InputRequiredError{Server: s.Name, Method: method, Result: res}
	case v != "complete":
		return nil, rpc.Errorf(rpc.CodeInternalError, "upstream %q answered %s with resultType %s; expected complete", s.Name, method, shortValue(rt))
	}
	out, _ := rawjson.Delete(res, "resultType")
	return out, nil
}

// shortValue quotes at most a short prefix of a server's value for an error.
func shortValue(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
