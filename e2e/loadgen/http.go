package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gate/mcp-gate/internal/rawjson"
)

// An HTTPClient speaks MCP's Streamable HTTP transport to one session of a
// server at a URL, as lightly as the stdio [Client]: a POST of JSON-RPC
// written by hand per request over kept-alive connections, its answer read
// from a JSON body or from the events of an SSE stream. Unlike [Client] it
// is safe for concurrent use once initialized: concurrency is concurrent
// POSTs, as an HTTP host makes them.
type HTTPClient struct {
	url     string
	token   string
	hc      *http.Client
	session string // Mcp-Session-Id, set by Initialize
	nextID  atomic.Int64
	calls   atomic.Int64
	bufs    sync.Pool
}

// NewHTTPTransport returns an HTTP client that keeps up to conns
// connections alive to one host, so that c concurrent calls reuse c
// connections rather than dialing.
func NewHTTPTransport(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// NewHTTP returns a client of the endpoint url that sends token as a
// bearer token ("" sends none), over hc.
func NewHTTP(hc *http.Client, url, token string) *HTTPClient {
	return &HTTPClient{url: url, token: token, hc: hc, bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
}

// Session is the session id the server gave, "" before Initialize.
func (c *HTTPClient) Session() string { return c.session }

// Calls is the number of tools/call requests sent so far.
func (c *HTTPClient) Calls() int { return int(c.calls.Load()) }

// Initialize performs the handshake and keeps the session id.
func (c *HTTPClient) Initialize() error {
	if _, err := c.Request("initialize", `{"protocolVersion":"`+ProtocolVersion+`","capabilities":{},"clientInfo":{"name":"loadgen","version":"1"}}`); err != nil {
		return err
	}
	return c.notify("notifications/initialized", `{}`)
}

// ListTools returns the raw result of tools/list.
func (c *HTTPClient) ListTools() ([]byte, error) { return c.Request("tools/list", `{}`) }

// Call makes one call and waits for its result, which must not be an error.
func (c *HTTPClient) Call(call Call) error {
	c.calls.Add(1)
	buf := c.bufs.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); c.bufs.Put(buf) }()
	r, err := c.roundTrip("tools/call", call.params(), buf)
	if err != nil {
		return err
	}
	return checkCall(call, r)
}

// Request sends a request and returns a copy of its result, or its error
// reply as an error.
func (c *HTTPClient) Request(method, params string) ([]byte, error) {
	var buf bytes.Buffer
	r, err := c.roundTrip(method, params, &buf)
	if err != nil {
		return nil, err
	}
	res, err := resultOf(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return bytes.Clone(res), nil
}

func (c *HTTPClient) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// post sends one message and returns the response, whose body the caller
// closes.
func (c *HTTPClient) post(body []byte) (*http.Response, error) {
	req, err := c.newRequest(context.Background(), http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", c.url, err)
	}
	return resp, nil
}

func (c *HTTPClient) notify(method, params string) error {
	resp, err := c.post([]byte(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}`))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %s", method, resp.Status)
	}
	return nil
}

// roundTrip POSTs one request and reads its reply, from a JSON body or the
// SSE stream the server answered with; the reply's bytes live in buf.
func (c *HTTPClient) roundTrip(method, params string, buf *bytes.Buffer) (reply, error) {
	id := c.nextID.Add(1)
	// Not in buf: the body may still be read while buf takes the reply.
	b := make([]byte, 0, 64+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	b = append(b, '}')
	resp, err := c.post(b)
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return reply{}, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, bytes.TrimSpace(msg))
	}
	if method == "initialize" {
		c.session = resp.Header.Get("Mcp-Session-Id")
	}
	buf.Reset()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return reply{}, fmt.Errorf("%s: reading the reply: %w", method, err)
		}
		got, r, err := parseReply(buf.Bytes())
		if err != nil {
			return reply{}, fmt.Errorf("%s: %w", method, err)
		}
		if got != id {
			return reply{}, fmt.Errorf("%s: reply has id %d, want %d", method, got, id)
		}
		return r, nil
	case "text/event-stream":
		r, err := c.readEvents(resp.Body, id, buf)
		if err != nil {
			return reply{}, fmt.Errorf("%s: %w", method, err)
		}
		// Read to the end, so the connection is reused.
		io.Copy(io.Discard, resp.Body)
		return r, nil
	default:
		return reply{}, fmt.Errorf("%s: reply of Content-Type %q, want application/json or text/event-stream", method, mt)
	}
}

// readEvents reads SSE events until the reply to id. A server's request
// on the stream is refused (the client offers nothing); notifications are
// skipped.
func (c *HTTPClient) readEvents(body io.Reader, id int64, buf *bytes.Buffer) (reply, error) {
	br := bufio.NewReaderSize(body, 16<<10)
	for {
		buf.Reset()
		for { // one event: its data lines, joined by newlines
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				// A long line: collect it whole.
				long := append([]byte(nil), line...)
				for errors.Is(err, bufio.ErrBufferFull) {
					line, err = br.ReadSlice('\n')
					long = append(long, line...)
				}
				line = long
			}
			if err != nil {
				return reply{}, fmt.Errorf("the SSE stream ended before the reply: %w", err)
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if buf.Len() > 0 {
					buf.WriteByte('\n')
				}
				buf.Write(bytes.TrimPrefix(data, []byte(" ")))
			}
		}
		if buf.Len() == 0 {
			continue // a comment, or an event without data
		}
		msg := buf.Bytes()
		method, sid, err := requestOf(msg)
		if err != nil {
			return reply{}, err
		}
		if method != nil {
			if sid != nil {
				resp, err := c.post([]byte(`{"jsonrpc":"2.0","id":` + string(sid) + `,"error":{"code":-32601,"message":"the load generator offers nothing"}}`))
				if err != nil {
					return reply{}, fmt.Errorf("refusing a server request: %w", err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			continue
		}
		got, r, err := parseReply(msg)
		if err != nil {
			return reply{}, err
		}
		if got != id {
			return reply{}, fmt.Errorf("reply has id %d, want %d", got, id)
		}
		return r, nil
	}
}

// requestOf returns the method and id of a message that is a request or a
// notification (method nil otherwise).
func requestOf(msg []byte) (method, id []byte, err error) {
	err = rawjson.Members(msg, func(m rawjson.Member) bool {
		switch m.Key {
		case "method":
			method = m.Value
		case "id":
			id = m.Value
		}
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading a message: %w: %.200q", err, msg)
	}
	return method, id, nil
}

// parseReply returns a response's id and parts.
func parseReply(msg []byte) (int64, reply, error) {
	var id []byte
	r := reply{whole: msg}
	if err := rawjson.Members(msg, func(m rawjson.Member) bool {
		switch m.Key {
		case "id":
			id = m.Value
		case "result":
			r.result = m.Value
		case "error":
			r.err = m.Value
		}
		return true
	}); err != nil {
		return 0, reply{}, fmt.Errorf("reading a reply: %w: %.200q", err, msg)
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	if err != nil {
		return 0, reply{}, fmt.Errorf("reply id %q is not one of ours: %.200q", id, msg)
	}
	return n, r, nil
}

// OpenStream opens the session's GET stream and returns once the server
// has answered it with an event stream; closing the returned stream ends
// it. What arrives on it is read and dropped.
func (c *HTTPClient) OpenStream() (io.Closer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := c.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("GET %s: %w", c.url, err)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET stream: HTTP %s (%s): %s", resp.Status, mt, bytes.TrimSpace(msg))
	}
	s := &stream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	return s, nil
}

type stream struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *stream) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Delete ends the session (DELETE with its id).
func (c *HTTPClient) Delete() error {
	req, err := c.newRequest(context.Background(), http.MethodDelete, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("DELETE %s: %w", c.url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE: HTTP %s", resp.Status)
	}
	return nil
}

// HTTPLatency makes n calls one at a time and returns each one's latency,
// appended to lat.
func HTTPLatency(c *HTTPClient, call Call, n int, lat []time.Duration) ([]time.Duration, error) {
	for range n {
		t0 := time.Now()
		if err := c.Call(call); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// HTTPThroughput runs conc goroutines that each make calls one after the
// other on c for about d, and returns the number of calls answered and the
// time they took.
func HTTPThroughput(c *HTTPClient, call Call, conc int, d time.Duration) (int, time.Duration, error) {
	var n atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(d)
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := c.Call(call); err != nil {
					once.Do(func() { first = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load()), time.Since(t0), first
}
