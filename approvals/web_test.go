package approvals

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// The page's own checks, request by request: Host, the one-time link,
// the cookie, Origin and the CSRF token each refuse on their own.
func TestWebChecks(t *testing.T) {
	w, login := NewWeb(Client{Dir: shortDir(t)}, "127.0.0.1:9")
	do := func(method, path, origin, csrf, body string, cookie *http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://127.0.0.1:9"+path, strings.NewReader(body))
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if csrf != "" {
			r.Header.Set("X-CSRF-Token", csrf)
		}
		if cookie != nil {
			r.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, r)
		return rec
	}
	// Another Host (DNS rebinding) is refused before anything else.
	r := httptest.NewRequest("GET", "http://evil.example:9"+login, nil)
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, r)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Fatalf("wrong Host: %d", rec.Code)
	}
	if rec := do("GET", "/", "", "", "", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("no cookie: %d", rec.Code)
	}
	if rec := do("GET", "/login?token=00", "", "", "", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", rec.Code)
	}
	rec = do("GET", login, "", "", "", nil)
	if rec.Code != http.StatusSeeOther || len(rec.Result().Cookies()) != 1 {
		t.Fatalf("login: %d", rec.Code)
	}
	ck := rec.Result().Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", ck)
	}
	if rec := do("GET", login, "", "", "", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("the one-time link worked twice: %d", rec.Code)
	}
	if rec := do("GET", "/", "", "", "", ck); rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("page: %d %v", rec.Code, rec.Header())
	}
	body := `{"id":"x","op":"approve","scope":"once","csrf":"` + w.csrf + `"}`
	if rec := do("POST", "/api/answer", "http://127.0.0.1:8", w.csrf, body, ck); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Origin") {
		t.Fatalf("another origin with the right token: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/api/answer", "", w.csrf, body, ck); rec.Code != http.StatusForbidden {
		t.Fatalf("no origin: %d", rec.Code)
	}
	if rec := do("POST", "/api/answer", "http://127.0.0.1:9", "", body, ck); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "CSRF") {
		t.Fatalf("no CSRF header: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/api/questions", "", "", "", ck); rec.Code != http.StatusForbidden {
		t.Fatalf("questions without the CSRF header: %d", rec.Code)
	}
	// All checks pass: the answer reaches the gates (none has this id).
	if rec := do("POST", "/api/answer", "http://127.0.0.1:9", w.csrf, body, ck); rec.Code != http.StatusConflict {
		t.Fatalf("a good answer: %d %s", rec.Code, rec.Body)
	}
}

// The page takes a click only once its list has held still: when the
// question on top closes (its call withdrawn, which whoever asked can
// time), the one below moves up under the pointer, and a click meant for
// the first approved the second, which the human never read. Run with node
// against a small fake DOM (testdata/webapp_settle.js).
func TestWebClickOnAQuestionThatJustMoved(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is needed to run the page's script")
	}
	out, err := exec.Command(node, "testdata/webapp_settle.js", "web/app.js").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("the page's script: %v\n%s", err, out)
	}
}
