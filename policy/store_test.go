package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testDebounce = 20 * time.Millisecond

// logBuffer collects JSON log lines from the watcher goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the decoded log records with msg "policy reload".
func (b *logBuffer) records(t testing.TB) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "policy reload" {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls cond until it holds; the deadline only keeps a broken
// watcher from hanging the test, it asserts nothing about speed.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// genPolicyText is a valid policy whose decisions reveal its generation.
// version comes last, so that any strict prefix of the file (as a reader
// may see in the middle of an in-place write) is invalid.
func genPolicyText(gen int) string {
	return fmt.Sprintf(`deny: [mcp:s:gen%d]
rules:
  - name: gen-%d
    match: "mcp:s:probe"
    action: allow
fallback: deny
version: 1`, gen, gen)
}

const invalidPolicyText = "version: 1\nfallback: allow\ndeny: [nonsense]\n"

func writeRename(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeInPlace(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func startWatch(t *testing.T, path string, onChange func(old, new *Policy)) (*Store, *logBuffer, context.CancelFunc) {
	t.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := watch(ctx, path, Options{}, slog.New(slog.NewJSONHandler(logs, nil)), onChange, watchAfter(testDebounce))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-s.Done()
	})
	return s, logs, cancel
}

func probe(p *Policy) string { return p.Decide(Call{Server: "s", Name: "probe"}).Rule }

func TestWatchStartErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Watch(context.Background(), filepath.Join(dir, "missing.yaml"), Options{}, nil, nil); err == nil {
		t.Error("Watch on a missing file succeeded")
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeInPlace(t, bad, invalidPolicyText)
	_, err := Watch(context.Background(), bad, Options{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:2:11: fallback is \"allow\"") || !strings.Contains(err.Error(), "bad.yaml:3:8:") {
		t.Errorf("err %v; want every problem with its position", err)
	}
}

func TestWatchEditorSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	var mu sync.Mutex
	var changes [][2]string
	s, logs, _ := startWatch(t, path, func(old, new *Policy) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, [2]string{probe(old), probe(new)})
	})
	if probe(s.Current()) != "gen-0" {
		t.Fatalf("initial policy decides %s", probe(s.Current()))
	}

	// A rename save.
	writeRename(t, path, genPolicyText(1))
	waitFor(t, "the renamed file", func() bool { return probe(s.Current()) == "gen-1" })

	// An in-place write.
	writeInPlace(t, path, genPolicyText(2))
	waitFor(t, "the rewritten file", func() bool { return probe(s.Current()) == "gen-2" })

	// vim's backup dance: the file moves away, a new one is written, the
	// backup is removed.
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	writeInPlace(t, path, genPolicyText(3))
	if err := os.Remove(path + "~"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "vim's save", func() bool { return probe(s.Current()) == "gen-3" })

	// An invalid save changes nothing and is logged with its problems.
	before := s.Current()
	writeRename(t, path, invalidPolicyText)
	waitFor(t, "the failure to be logged", func() bool {
		for _, r := range logs.records(t) {
			if r["ok"] == false && strings.Contains(fmt.Sprint(r["error"]), "policy.yaml:3:8:") {
				return true
			}
		}
		return false
	})
	if s.Current() != before {
		t.Fatal("an invalid file replaced the policy")
	}

	// Deleting keeps the last good policy, and says so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion to be logged", func() bool {
		for _, r := range logs.records(t) {
			if r["ok"] == false && strings.Contains(fmt.Sprint(r["error"]), "gone; keeping the last good policy") {
				return true
			}
		}
		return false
	})
	if s.Current() != before {
		t.Fatal("a deleted file replaced the policy")
	}

	// A file that reappears is loaded.
	writeRename(t, path, genPolicyText(4))
	waitFor(t, "the file that reappeared", func() bool { return probe(s.Current()) == "gen-4" })

	// Touching the file without changing it, or another file of the
	// directory, changes nothing and calls nothing.
	cur := s.Current()
	writeInPlace(t, path, genPolicyText(4))
	writeInPlace(t, filepath.Join(dir, "other.txt"), "x")
	time.Sleep(10 * testDebounce) // give a wrong reload the chance to happen
	if s.Current() != cur {
		t.Error("an unchanged content was swapped in again")
	}

	mu.Lock()
	got := fmt.Sprint(changes)
	mu.Unlock()
	if want := "[[gen-0 gen-1] [gen-1 gen-2] [gen-2 gen-3] [gen-3 gen-4]]"; got != want {
		t.Errorf("onChange calls %s; want %s", got, want)
	}

	// Every reload line carries the fixed keys.
	for _, r := range logs.records(t) {
		for _, k := range []string{"event", "policy_file", "ok", "revision", "old_revision", "warnings"} {
			if _, ok := r[k]; !ok {
				t.Errorf("log line %v lacks %q", r, k)
			}
		}
		if r["event"] != "policy_reload" || r["policy_file"] != path {
			t.Errorf("log line %v", r)
		}
		if _, hasErr := r["error"]; hasErr == (r["ok"] == true) {
			t.Errorf("log line %v: error must be there exactly when ok is false", r)
		}
	}
}

// k8sDir lays out a Kubernetes ConfigMap volume: the file is a symlink
// through ..data to a timestamped directory.
type k8sDir struct {
	dir string
	gen int
}

func (k *k8sDir) publish(t testing.TB, content string) {
	t.Helper()
	k.gen++
	ts := filepath.Join(k.dir, fmt.Sprintf("..2026_01_01_00_00_%02d.%d", k.gen%60, k.gen))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "policy.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(k.dir, "..data"))
	tmp := filepath.Join(k.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(k.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(k.dir, old)); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(k.dir, "policy.yaml")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink("..data/policy.yaml", link); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWatchKubernetesSwap(t *testing.T) {
	k := &k8sDir{dir: t.TempDir()}
	k.publish(t, genPolicyText(0))
	s, _, _ := startWatch(t, filepath.Join(k.dir, "policy.yaml"), nil)
	for gen := 1; gen <= 3; gen++ {
		k.publish(t, genPolicyText(gen))
		want := fmt.Sprintf("gen-%d", gen)
		waitFor(t, "the ..data swap to "+want, func() bool { return probe(s.Current()) == want })
	}
	before := s.Current()
	k.publish(t, invalidPolicyText)
	k.publish(t, genPolicyText(9))
	waitFor(t, "the swap after an invalid one", func() bool { return probe(s.Current()) == "gen-9" })
	if before == s.Current() {
		t.Error("no change")
	}
}

// TestWatchSymlinkElsewhere: a policy path that is a symlink to a file in
// another directory follows edits of the target.
func TestWatchSymlinkElsewhere(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	target := filepath.Join(b, "real.yaml")
	writeInPlace(t, target, genPolicyText(0))
	link := filepath.Join(a, "policy.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, _, _ := startWatch(t, link, nil)
	writeRename(t, target, genPolicyText(1))
	waitFor(t, "the edited target", func() bool { return probe(s.Current()) == "gen-1" })
}

func TestWatchStopsWithContext(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	s, _, cancel := startWatch(t, path, nil)
	cancel()
	<-s.Done()
	writeRename(t, path, genPolicyText(1))
	time.Sleep(10 * testDebounce)
	if probe(s.Current()) != "gen-0" {
		t.Error("a stopped watcher reloaded")
	}
	st := NewStatic(Default())
	if st.Current() != Default() {
		t.Error("static store")
	}
	<-st.Done()
}

// TestReloadUnderConcurrentCalls: readers decide on Current() without a
// pause while a writer sends a stream of valid and invalid files by rename,
// in-place write and ..data swap, and deletes the file. Every decision must
// come from a complete, valid generation (its rule agrees with its
// revision); invalid files are never in force; the last valid one is in
// force at the end.
func TestReloadUnderConcurrentCalls(t *testing.T) {
	k := &k8sDir{dir: t.TempDir()}
	var valid sync.Map // revision -> expected probe rule
	publishValid := func(gen int, how func(string)) {
		text := genPolicyText(gen)
		valid.Store(revisionOf([]byte(text)), fmt.Sprintf("gen-%d", gen))
		how(text)
	}
	// The ..data layout serves the swaps; rename and in-place writes go to
	// the file the link resolves to, which the watcher also sees.
	publishValid(0, func(s string) { k.publish(t, s) })
	path := filepath.Join(k.dir, "policy.yaml")
	s, logs, _ := startWatch(t, path, nil)

	stop := make(chan struct{})
	var decisions atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := s.Current()
				d := p.Decide(Call{Server: "s", Name: "probe"})
				want, ok := valid.Load(d.Revision)
				if !ok || d.Rule != want || d.Verdict != Allow {
					select {
					case errs <- fmt.Sprintf("decision %+v from revision %s (known: %v, want rule %v)", d, p.Revision(), ok, want):
					default:
					}
					return
				}
				decisions.Add(1)
			}
		}()
	}

	target := func() string {
		r, err := filepath.EvalSymlinks(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	last := 0
	for gen := 1; gen <= 30; gen++ {
		switch gen % 5 {
		case 0:
			publishValid(gen, func(s string) { k.publish(t, s) })
		case 1:
			publishValid(gen, func(s string) { writeRename(t, target(), s) })
		case 2:
			publishValid(gen, func(s string) { writeInPlace(t, target(), s) })
		case 3:
			writeRename(t, target(), invalidPolicyText)
			continue
		case 4:
			k.publish(t, "version: 1\n")
			continue
		}
		last = gen
		// Some writes land within one debounce window and only the last of
		// them is loaded; waiting on every third keeps both kinds.
		if gen%3 == 0 {
			want := fmt.Sprintf("gen-%d", gen)
			waitFor(t, want, func() bool { return probe(s.Current()) == want })
		}
	}
	wantLast := fmt.Sprintf("gen-%d", last)
	waitFor(t, "the last valid write", func() bool { return probe(s.Current()) == wantLast })

	// Deleting the file keeps the last good policy.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion to be logged", func() bool {
		for _, r := range logs.records(t) {
			if strings.Contains(fmt.Sprint(r["error"]), "gone") {
				return true
			}
		}
		return false
	})
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if probe(s.Current()) != wantLast {
		t.Errorf("after deletion the policy decides %s; want %s", probe(s.Current()), wantLast)
	}
	if decisions.Load() == 0 {
		t.Error("the readers decided nothing")
	}
	t.Logf("%d decisions during the reloads", decisions.Load())
}

// startWatchAt is startWatch with the production debounce, for the tests
// whose point is timing under real conditions.
func startWatchAt(t *testing.T, path string, debounce time.Duration, onChange func(old, new *Policy)) (*Store, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := watch(ctx, path, Options{}, slog.New(slog.NewJSONHandler(logs, nil)), onChange, watchAfter(debounce))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-s.Done()
	})
	return s, logs
}

// Issue 8: a file beside the policy written more often than the debounce
// (the gate's own audit log) kept every reload from happening, so an
// emergency deny never applied. A valid edit must apply within the
// watcher's own latency (the debounce, then the settle time), with slack
// for a busy machine, however busy the directory is.
//
// The slack (10x, where a second was 2x and failed under load) cannot
// hide the regression: a watcher that lets the neighbour's events
// postpone the reload does not reload at all while the neighbour writes
// every 20 ms, and waitFor gives up after 20 s.
func TestWatchBusyNeighbour(t *testing.T) {
	// What the docs promise (a new policy applies within a second of being
	// seen, docs/deploy.md) is checked on the design, exactly, and the
	// running watcher against it with slack below.
	if latency := reloadDebounce + settleFactor*reloadDebounce; latency >= time.Second {
		t.Fatalf("the watcher waits %s before applying an edit; the docs promise less than a second", latency)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	s, _ := startWatchAt(t, path, reloadDebounce, nil)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				f.WriteString(`{"event":"decision"}` + "\n")
			}
		}
	}()
	defer func() { close(stop); <-done }()

	time.Sleep(300 * time.Millisecond) // the neighbour is busy before the edit
	for gen := 1; gen <= 2; gen++ {
		start := time.Now()
		if gen == 1 {
			writeInPlace(t, path, genPolicyText(gen))
		} else {
			writeRename(t, path, genPolicyText(gen))
		}
		want := fmt.Sprintf("gen-%d", gen)
		waitFor(t, want, func() bool { return probe(s.Current()) == want })
		latency := reloadDebounce + settleFactor*reloadDebounce
		if took := time.Since(start); took > 10*latency {
			t.Errorf("edit %d applied after %s beside a busy file; want within %s (the watcher needs %s)", gen, took, 10*latency, latency)
		}
	}
}

// Issue 8: a slow in-place rewrite put a truncated but valid policy in
// force. The prefix here allows what the whole file denies; it must never
// be applied.
func TestWatchSlowWriterNeverAppliesPrefix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	prefix := "version: 1\nfallback: deny\nrules:\n  - name: open\n    match: \"mcp:s:probe\"\n    action: allow\n"
	whole := prefix + "deny: [\"mcp:s:probe\"]\n"
	// The premise: both are valid, and they disagree.
	pp, _, err := Parse("p", []byte(prefix), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pw, _, err := Parse("w", []byte(whole), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pp.Decide(Call{Server: "s", Name: "probe"}).Verdict != Allow || pw.Decide(Call{Server: "s", Name: "probe"}).Verdict != Deny {
		t.Fatal("the prefix must allow what the whole denies")
	}
	var mu sync.Mutex
	var seen []string
	s, _ := startWatchAt(t, path, reloadDebounce, func(_, new *Policy) {
		mu.Lock()
		seen = append(seen, new.Revision())
		mu.Unlock()
	})
	var leaked atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s.Current().Revision() == pp.Revision() {
				leaked.Store(true)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(prefix); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := f.WriteString(whole[len(prefix):]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the whole file", func() bool { return s.Current().Revision() == pw.Revision() })
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if leaked.Load() || slices.Contains(seen, pp.Revision()) {
		t.Fatalf("the truncated policy %s was in force; revisions applied: %v", pp.Revision(), seen)
	}
	if want := []string{pw.Revision()}; !slices.Equal(seen, want) {
		t.Errorf("revisions applied %v; want %v", seen, want)
	}
}

// A failed reload names the content it refused, beside the one kept.
func TestWatchFailureNamesRejectedRevision(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeInPlace(t, path, genPolicyText(0))
	s, logs, _ := startWatch(t, path, nil)
	writeRename(t, path, invalidPolicyText)
	var rec map[string]any
	waitFor(t, "the failure", func() bool {
		for _, r := range logs.records(t) {
			if r["ok"] == false {
				rec = r
				return true
			}
		}
		return false
	})
	if rec["rejected_revision"] != revisionOf([]byte(invalidPolicyText)) || rec["revision"] != s.Current().Revision() || rec["event"] != "policy_reload" {
		t.Errorf("failure record %v; want rejected_revision %s and revision %s", rec, revisionOf([]byte(invalidPolicyText)), s.Current().Revision())
	}
}

// A link in the middle of a chain (policy.yaml -> b/link.yaml ->
// c/real.yaml) re-pointed elsewhere is a new policy: its directory is
// watched too.
func TestWatchRepointedMiddleLink(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	writeInPlace(t, filepath.Join(c, "real.yaml"), genPolicyText(0))
	writeInPlace(t, filepath.Join(c, "other.yaml"), genPolicyText(1))
	mid := filepath.Join(b, "link.yaml")
	if err := os.Symlink(filepath.Join(c, "real.yaml"), mid); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a, "policy.yaml")
	if err := os.Symlink(mid, path); err != nil {
		t.Fatal(err)
	}
	s, _, _ := startWatch(t, path, nil)
	time.Sleep(10 * testDebounce) // past the first check
	tmp := filepath.Join(b, "link.tmp")
	if err := os.Symlink(filepath.Join(c, "other.yaml"), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, mid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the re-pointed link", func() bool { return probe(s.Current()) == "gen-1" })
}

func TestSymlinkChain(t *testing.T) {
	k := &k8sDir{dir: t.TempDir()}
	k.publish(t, genPolicyText(0))
	dir, _ := filepath.EvalSymlinks(k.dir)
	chain := symlinkChain(filepath.Join(dir, "policy.yaml"))
	target, _ := filepath.EvalSymlinks(filepath.Join(dir, "policy.yaml"))
	want := []string{filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "..data"), target}
	if !slices.Equal(chain, want) {
		t.Errorf("chain %q; want %q", chain, want)
	}
	// A loop ends; a missing file is its own chain.
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)
	if got := symlinkChain(loop); len(got) > maxLinks+2 {
		t.Errorf("loop chain has %d names", len(got))
	}
	if got := symlinkChain(filepath.Join(dir, "none")); !slices.Equal(got, []string{filepath.Join(dir, "none")}) {
		t.Errorf("missing: %q", got)
	}
}
