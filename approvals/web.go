package approvals

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The web page (mcp-gate approvals web) is a client of the gates' sockets
// like the CLI, served on loopback to one browser:
//
//   - a one-time token, printed only to the terminal that ran the command,
//     is exchanged once for a session cookie (HttpOnly, SameSite=Strict);
//     a second use of the link is refused, so a link seen later (shell
//     history, a screenshot) opens nothing;
//   - every request must name the listener's own address in Host (no DNS
//     rebinding); answers must come with the page's own Origin and the CSRF
//     token the page was served with;
//   - questions are shown exactly as the elicitation form's text
//     (Question.Message, already quoted and neutralised), set as text,
//     never as HTML, under a strict Content-Security-Policy.

//go:embed web/index.html
var indexHTML []byte

//go:embed web/app.js
var appJS []byte

// Web serves the page for one browser. Create it with NewWeb.
type Web struct {
	c      Client
	origin string // http://127.0.0.1:PORT
	host   string // 127.0.0.1:PORT
	csrf   string
	cookie string
	// Refused, when set, is told of every refused request (the
	// command's own stderr: the user's terminal).
	Refused func(why string, r *http.Request)

	mu        sync.Mutex
	tokenUsed bool
	token     string
}

const cookieName = "mcp_gate_approvals"

// NewWeb returns the page's handler for a listener at addr (the exact
// host:port the browser uses) and the one-time login path.
func NewWeb(c Client, addr string) (*Web, string) {
	w := &Web{c: c, host: addr, origin: "http://" + addr, csrf: randomID() + randomID(), cookie: randomID() + randomID(), token: randomID() + randomID()}
	return w, "/login?token=" + w.token
}

// ServeWeb listens on addr (a loopback address), prints the one-time link
// to out, and serves the page until ctx is done.
func ServeWeb(ctx context.Context, c Client, addr string, out, errOut io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: expected a loopback IP address such as 127.0.0.1:0; the page is for this machine only", addr)
	}
	if _, err := c.Sockets(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	w, login := NewWeb(c, ln.Addr().String())
	w.Refused = func(why string, r *http.Request) {
		fmt.Fprintf(errOut, "refused %s %s (Origin %q): %s\n", r.Method, r.URL.Path, r.Header.Get("Origin"), why)
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(out, "open this link once, in your browser (it works once and only on this machine):\n  %s%s\n", w.origin, login)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// ServeHTTP implements http.Handler.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h := rw.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
	if r.Host != w.host {
		http.Error(rw, "wrong Host; open the link printed by mcp-gate approvals web", http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/login" {
		w.login(rw, r)
		return
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || !eq(ck.Value, w.cookie) {
		w.refuse(rw, r, http.StatusUnauthorized, "not logged in: open the one-time link printed by mcp-gate approvals web")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = rw.Write(indexHTML)
	case r.Method == http.MethodGet && r.URL.Path == "/app.js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = rw.Write(appJS)
	case r.Method == http.MethodGet && r.URL.Path == "/api/questions":
		// Also requires the CSRF header: a cross-origin page can send
		// neither a custom header without a preflight we never grant.
		if !eq(r.Header.Get("X-CSRF-Token"), w.csrf) {
			http.Error(rw, "missing or wrong CSRF token", http.StatusForbidden)
			return
		}
		qs, errs := w.c.List()
		var problems []string
		for _, e := range errs {
			problems = append(problems, e.Error())
		}
		if qs == nil {
			qs = []Question{}
		}
		writeJSON(rw, map[string]any{"questions": qs, "problems": problems})
	case r.Method == http.MethodGet && r.URL.Path == "/api/csrf":
		// Same-origin fetches only: the browser keeps a cross-origin page
		// from reading this response.
		if o := r.Header.Get("Origin"); o != "" && o != w.origin {
			http.Error(rw, "wrong Origin", http.StatusForbidden)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") != "" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
			http.Error(rw, "cross-site request refused", http.StatusForbidden)
			return
		}
		writeJSON(rw, map[string]string{"csrf": w.csrf})
	case r.Method == http.MethodPost && r.URL.Path == "/api/answer":
		w.answer(rw, r)
	default:
		http.NotFound(rw, r)
	}
}

func (w *Web) login(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	ok := !w.tokenUsed && r.Method == http.MethodGet && eq(r.URL.Query().Get("token"), w.token)
	if ok {
		w.tokenUsed = true
	}
	w.mu.Unlock()
	if !ok {
		w.refuse(rw, r, http.StatusUnauthorized, "this link has been used already, or is wrong: run mcp-gate approvals web again for a new one")
		return
	}
	http.SetCookie(rw, &http.Cookie{Name: cookieName, Value: w.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(rw, r, "/", http.StatusSeeOther)
}

func (w *Web) answer(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != w.origin {
		w.refuse(rw, r, http.StatusForbidden, "wrong or missing Origin: answers come from this page only")
		return
	}
	var a struct {
		ID    string `json:"id"`
		Op    string `json:"op"`
		Scope string `json:"scope"`
		CSRF  string `json:"csrf"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		http.Error(rw, "the answer is not valid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !eq(a.CSRF, w.csrf) || !eq(r.Header.Get("X-CSRF-Token"), w.csrf) {
		w.refuse(rw, r, http.StatusForbidden, "missing or wrong CSRF token")
		return
	}
	if a.Op != "approve" && a.Op != "deny" {
		http.Error(rw, "op is "+strconv.Quote(a.Op)+"; expected approve or deny", http.StatusBadRequest)
		return
	}
	if err := w.c.Answer(a.Op, a.ID, a.Scope); err != nil {
		http.Error(rw, err.Error(), http.StatusConflict)
		return
	}
	writeJSON(rw, map[string]bool{"ok": true})
}

func (w *Web) refuse(rw http.ResponseWriter, r *http.Request, code int, why string) {
	if w.Refused != nil {
		w.Refused(why, r)
	}
	http.Error(rw, why, code)
}

func writeJSON(rw http.ResponseWriter, v any) {
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(v)
}
