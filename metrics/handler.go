package metrics

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// What the Prometheus client's handler gave the gate, kept: a bounded
// number of scrapes rendered at once, each within a time limit.
const (
	maxScrapes    = 4
	scrapeTimeout = 10 * time.Second
	// contentType is the text exposition format, version 0.0.4.
	contentType = "text/plain; version=0.0.4; charset=utf-8"
)

// Handler serves the exposition in the Prometheus text format. At most
// four scrapes are rendered at once (a fifth is answered 503, so that a
// flood of scrapes cannot pile up work), a scrape that takes over 10 s is
// answered 503, and a scrape is rendered whole into memory before a byte
// is written: a scraper gets all of it or an error status, never a partial
// view an alert could misread.
func (m *Metrics) Handler() http.Handler { return m.handler(maxScrapes, scrapeTimeout) }

func (m *Metrics) handler(limit int, timeout time.Duration) http.Handler {
	inFlight := make(chan struct{}, limit)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent scrapes reached (%d), try again later.", limit), http.StatusServiceUnavailable)
			return
		}
		body, err := m.gather()
		if err != nil {
			http.Error(w, "An error has occurred while serving metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", contentType)
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			var z bytes.Buffer
			zw := gzipWriters.Get().(*gzip.Writer)
			zw.Reset(&z)
			zw.Write(body)
			zw.Close()
			gzipWriters.Put(zw)
			body = z.Bytes()
			hd.Set("Content-Encoding", "gzip")
		}
		hd.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	// The handler goes on rendering past the limit (the library's writers
	// take no context), holding its slot, so a slow gather still counts
	// against the four.
	return http.TimeoutHandler(h, timeout, fmt.Sprintf("Exceeded the scrape timeout of %v.\n", timeout))
}

// gzipWriters keeps compressors between scrapes: each holds some hundreds
// of KB of state, which a new one per scrape would make again.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// gather renders the whole exposition: the gate's families, then the Go
// runtime's and the process's. A panic in a writer (the library panics on
// what it takes for a bug) is an error for this scrape, not the end of
// the gate.
func (m *Metrics) gather() (body []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			body, err = nil, fmt.Errorf("rendering the exposition: %v", p)
		}
	}()
	var raw bytes.Buffer
	m.set.WritePrometheus(&raw)
	vm.WriteGoMetrics(&raw)
	vm.WriteProcMetrics(&raw)
	vm.WriteFDMetrics(&raw)
	return withHelp(raw.Bytes()), nil
}

// withHelp fills in the HELP lines. The library writes "# HELP name" with
// no text before each family's TYPE line; the gate's families get their
// text (the help map), and a bare HELP line of any other family (Go
// runtime, process) is dropped, HELP being optional and a bare one saying
// nothing.
func withHelp(raw []byte) []byte {
	out := make([]byte, 0, len(raw)+4096)
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		if name, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), []byte("# HELP ")); ok && bytes.IndexByte(name, ' ') < 0 {
			if text, ok := help[string(name)]; ok {
				out = append(out, "# HELP "...)
				out = append(out, name...)
				out = append(out, ' ')
				out = append(out, escapeHelp(text)...)
				out = append(out, '\n')
			}
			continue
		}
		out = append(out, line...)
	}
	return out
}

// acceptsGzip says whether an Accept-Encoding header offers gzip with a
// non-zero weight.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		// A weight of zero refuses it (RFC 9110 12.4.2): "q" in either
		// case, with or without decimals. A coding named twice counts
		// only at its first mention, as before.
		q := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(params), " ", ""))
		w, ok := strings.CutPrefix(q, "q=")
		if !ok {
			return true
		}
		return strings.Trim(w, "0.") != "" || !strings.HasPrefix(w, "0")
	}
	return false
}
