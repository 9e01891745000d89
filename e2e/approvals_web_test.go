package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const chromiumPath = "/usr/bin/chromium"

// startWebOutside runs `mcp-gate approvals web` outside the host's
// ancestry and session (as approvalsOutside does) and returns its
// one-time link, read from its own stdout (the user's terminal).
func startWebOutside(t *testing.T, rt string) (string, func() string) {
	t.Helper()
	dir := t.TempDir()
	const script = `while [ "$(cat /proc/$(cut -d' ' -f4 /proc/$$/stat)/comm)" = setsid ]; do sleep 0.01; done
echo $$ >"$D/pid"; exec "$@" >"$D/out" 2>&1`
	cmd := exec.Command("setsid", "-f", "sh", "-c", script, "sh", gateBin, "approvals", "web")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "D="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setsid: %v: %s", err, out)
	}
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/login\?token=[0-9a-f]+`)
	var url string
	waitFor(t, "the web page's link", 20*time.Second, func() bool {
		out, _ := os.ReadFile(filepath.Join(dir, "out"))
		url = link.FindString(string(out))
		return url != ""
	})
	pidText, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(pidText))); err == nil && pid > 1 {
		t.Cleanup(func() { _ = signalPID(pid, syscall.SIGTERM) })
	}
	return url, func() string { out, _ := os.ReadFile(filepath.Join(dir, "out")); return string(out) }
}

func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing; CI must install it (apt-get install -y chromium)", chromiumPath)
		}
		t.Skipf("%s is not installed; run apt-get install -y chromium (Debian) to run the web page test", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancelT)
	if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// The web page in real Chromium: a question appears, approve runs the
// call, deny refuses it, and a page from another origin cannot answer.
func TestLocalApprovalWebPage(t *testing.T) {
	// Not parallel (see harness_test.go): headless Chromium is heavy on both CPUs.
	ctx := browser(t)
	g, rt := localGate(t, localAskPolicy)
	sess := g.connect(t, nil)
	url, webOut := startWebOutside(t, rt)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	// The link works once.
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the one-time link opened a second time: %s", resp.Status)
	}

	// Approve.
	res := callAsync(t, sess, "honest__echo", map[string]any{"text": "web-yes\u202e"})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.q button.approve`))); err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`.q pre.message`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mcp-gate: approve this tool call?", `Tool: "echo"`, `"text": "web-yes[U+202E]"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the page's question lacks %q:\n%s", want, msg)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.q button.approve`))); err != nil {
		t.Fatal(err)
	}
	if r := awaitResult(t, res); r.IsError || !strings.Contains(resultText(r), "web-yes") {
		t.Fatalf("approved on the page: %q", resultText(r))
	}

	// Another origin: a page on another loopback port, in the same browser
	// (so the session cookie is sent: same site), tries to answer with the
	// page's own CSRF token, by every request a page can send unasked.
	res = callAsync(t, sess, "honest__echo", map[string]any{"text": "web-cross"})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.q button.deny`))); err != nil {
		t.Fatal(err)
	}
	csrf, err := chromedp.Run(ctx, chromedp.Evaluate[string](`csrf`))
	if err != nil {
		t.Fatal(err)
	}
	webOrigin, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.origin`))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := waitQuestion(t, rt)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := fmt.Sprintf(`{"id":%q,"op":"approve","scope":"once","csrf":%q}`, id, csrf)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body><form id="f" method="POST" action="%[1]s/api/answer" enctype="text/plain"><input name='%[2]s' value=''></form>
<script>
const u = %[1]q + "/api/answer";
Promise.allSettled([
  fetch(u, {method: "POST", mode: "no-cors", credentials: "include", body: %[3]q}),
  fetch(u, {method: "POST", credentials: "include", headers: {"Content-Type": "application/json", "X-CSRF-Token": %[4]q}, body: %[3]q}),
]).then(() => { document.title = "tried"; document.getElementById("f").submit(); });
</script></body>`, webOrigin, body[:len(body)-1]+`,"x":"`, body, csrf)
	}))
	defer evil.Close()
	evilCtx, cancelEvil := chromedp.NewContext(ctx)
	defer cancelEvil()
	if err := chromedp.Do(evilCtx, chromedp.Navigate(evil.URL), chromedp.Sleep(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		t.Fatalf("a page from another origin answered: %q", resultText(r))
	case <-time.After(time.Second):
	}
	if out, _ := approvalsOutside(t, rt, "list"); !strings.Contains(out, id) {
		t.Fatalf("the question was answered by the other origin's page:\n%s", out)
	}
	// Its requests did arrive, with the session cookie (same site), and
	// the Origin check refused them: the no-cors fetch and the form post.
	// (The fetch with the CSRF header needs a preflight, which fails.)
	waitFor(t, "the web page's refusals", 5*time.Second, func() bool {
		return strings.Count(webOut(), "POST /api/answer (Origin \""+evil.URL+"\"): wrong or missing Origin") >= 2
	})

	// Deny, on the page.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.q button.deny`))); err != nil {
		t.Fatal(err)
	}
	if r := awaitResult(t, res); !r.IsError || !strings.Contains(resultText(r), "answered no on the local approval surface") {
		t.Fatalf("denied on the page: %q", resultText(r))
	}
}
