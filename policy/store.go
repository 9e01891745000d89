package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Store holds the policy in force. Current is lock-free and safe for
// concurrent use; the snapshot it returns never changes, so a caller keeps
// deciding under one revision for as long as it holds it.
type Store struct {
	cur  atomic.Pointer[Policy]
	done chan struct{}
	obs  atomic.Pointer[reloadHook] // Observe
}

// NewStatic returns a store that always holds p.
func NewStatic(p *Policy) *Store {
	s := &Store{done: make(chan struct{})}
	s.cur.Store(p)
	close(s.done)
	return s
}

// Current returns the policy in force.
func (s *Store) Current() *Policy { return s.cur.Load() }

// Done is closed when the store stops following its file: when the context
// given to Watch is done, or at once for a static store.
func (s *Store) Done() <-chan struct{} { return s.done }

// reloadDebounce is how long the watcher waits after the last event that
// concerns the policy file before it reads the file: editors and
// Kubernetes change a file in several steps, and only the end state
// matters.
const reloadDebounce = 100 * time.Millisecond

// settleFactor times the debounce is how long a content must stay the same
// (size, modification time and bytes) before it is applied. A writer that
// rewrites the file in place may pause in the middle, and a prefix of a
// policy can be a valid policy that allows what the whole denies; a content
// that held still this long is taken for finished. (Linux's watch sees a
// file closed after writing, but a writer may close and open it again
// between its writes, and the poll, which sees changes that send no event
// at all, knows nothing of closes.)
const settleFactor = 4

// Watch loads the policy file at path and keeps the store in step with it
// until ctx is done. A file that is missing or invalid at the start is an
// error that lists every problem (a refusal to start).
//
// It watches the directories of the path and of every symlink on the way
// to the file, because editors save by writing a temporary file and
// renaming it over the old one, vim moves the old file to a backup first,
// and Kubernetes swaps a `..data` symlink that the path resolves through;
// on Linux also the file the path resolves to, for the writes the
// directories' watch leaves out (see dirWatcher).
// Only events that name the path, a link on the way, or a directory above
// one of them count: other files in those directories (the gate's own audit
// log beside the policy, say) may change as often as they like without
// delaying a reload. After the last such event (debounced) it reads what
// the path resolves to, and applies it once the same content has been read
// again settleFactor debounces later. A new content is validated fully and
// swapped in at once; an invalid one is logged with all its problems and
// changes nothing; a deleted file keeps the last good policy, and a file
// that reappears is loaded. Every outcome is logged as "policy reload" with
// the keys event, policy_file, ok, revision, old_revision, warnings and, on
// failure, error and rejected_revision (the content that was refused).
//
// onChange, when not nil, is called with the old and the new policy after
// each swap, only when the revision changed, on the watcher's goroutine and
// outside any lock: calls never overlap, and a slow onChange delays the
// next reload, not the callers of Current.
func Watch(ctx context.Context, path string, opts Options, logger *slog.Logger, onChange func(old, new *Policy)) (*Store, error) {
	return watch(ctx, path, opts, logger, onChange, watchAfter(reloadDebounce))
}

// watchConfig is how a reloader watches. Production uses
// watchAfter(reloadDebounce); the tests shorten the debounce, turn the poll
// off to see what the events alone catch, or use fsnotify's watcher, the
// one other systems get.
type watchConfig struct {
	debounce   time.Duration
	pollEvery  time.Duration // 0: no poll
	newWatcher func() (dirWatcher, error)
}

// watchAfter is the configuration for a debounce: the poll every
// pollFactor debounces, and this system's watcher.
func watchAfter(debounce time.Duration) watchConfig {
	return watchConfig{debounce: debounce, pollEvery: pollFactor * debounce, newWatcher: newDirWatcher}
}

func watch(ctx context.Context, path string, opts Options, logger *slog.Logger, onChange func(old, new *Policy), wc watchConfig) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	p, _, err := LoadFile(abs, opts)
	if err != nil {
		return nil, err
	}
	return followFile(ctx, abs, p, opts, logger, onChange, wc)
}

// followFile follows the file at abs with p in force until ctx is done.
//
// A file that loaded but cannot be watched is no reason to refuse to
// serve: a system out of watches (inotify's per-user limits on instances
// and watches, which editors and file-syncing tools use up, are reached in
// practice), a directory the gate may search but not read, inotify denied
// by a sandbox. The file is then followed by the poll alone, every
// pollFactor debounces, which sees every change that alters its size,
// modification time or identity, and that is logged. Only a directory
// that does not exist stays an error (WatchFailClosed's missing file).
func followFile(ctx context.Context, abs string, p *Policy, opts Options, logger *slog.Logger, onChange func(old, new *Policy), wc watchConfig) (*Store, error) {
	s := &Store{done: make(chan struct{})}
	s.cur.Store(p)
	rl := &reloader{
		store: s, path: abs, opts: opts, logger: logger, onChange: onChange,
		watched: map[string]bool{}, debounce: wc.debounce, settle: settleFactor * wc.debounce, pollEvery: wc.pollEvery,
	}
	w, err := wc.newWatcher()
	if err == nil {
		rl.w = w
		if _, err = rl.rewatch(); err != nil && errors.Is(err, fs.ErrNotExist) {
			w.Close()
			return nil, err
		}
	} else {
		err = fmt.Errorf("watching the policy file %s: %w", abs, err)
	}
	if err != nil {
		// pollAlone closes the watcher that failed, if any. The rewatch
		// then only records the symlink chain: pollOnly's Add never fails.
		rl.watched = map[string]bool{}
		rl.pollAlone(err.Error())
		_, _ = rl.rewatch()
	}
	go rl.run(ctx)
	return s, nil
}

// pollOnly is the dirWatcher of a reloader that has no watches: it reports
// nothing, and the reloader's poll sees what changes.
type pollOnly struct{}

func (pollOnly) Add(string) error              { return nil }
func (pollOnly) AddFile(string) error          { return nil }
func (pollOnly) Remove(string) error           { return nil }
func (pollOnly) Watching(string) bool          { return true }
func (pollOnly) Close() error                  { return nil }
func (pollOnly) events() <-chan fsnotify.Event { return nil }
func (pollOnly) errors() <-chan error          { return nil }

// reloader is the watcher goroutine's state; only that goroutine uses it.
type reloader struct {
	store    *Store
	path     string
	opts     Options
	logger   *slog.Logger
	onChange func(old, new *Policy)
	w        dirWatcher
	watched  map[string]bool // the directories asked for
	file     string          // the file whose content is watched (AddFile), "" for none
	debounce time.Duration
	settle   time.Duration
	// pollEvery is how often the file is looked at whatever the events
	// say (pollFactor debounces; 0 for never, in tests).
	pollEvery time.Duration

	// chain is the path, every symlink met resolving it, and where it
	// ends: the names whose events count.
	chain []string
	// pending is the last content read and not yet applied, and when it
	// was first read; it is applied once it has held still for settle.
	pending   *observation
	pendingAt time.Time

	// The last failure logged, so that the same bad content or the same
	// missing file is reported once, not at every unrelated event.
	lastFailure string

	// polled is what the last poll saw of the path (see pollFactor).
	polled    os.FileInfo
	polledErr bool
}

// pollFactor times the debounce is how often the watcher also looks at the
// file itself. Some changes send no event the watcher can see: a write
// through a hard link elsewhere (the event names the other link), a bind
// mount or a network or VM-shared file system (Docker Desktop, NFS) that
// does not pass inotify events on. A look costs one stat.
const pollFactor = 10

// poll reports whether the file the path names changed since the last poll.
func (rl *reloader) poll() bool {
	fi, err := os.Stat(rl.path)
	changed := (err != nil) != rl.polledErr
	if err == nil && rl.polled != nil {
		changed = changed || fi.Size() != rl.polled.Size() || !fi.ModTime().Equal(rl.polled.ModTime()) || !os.SameFile(fi, rl.polled)
	}
	rl.polled, rl.polledErr = fi, err != nil
	return changed
}

// observation is what the path resolved to when it was read.
type observation struct {
	err   error // reading failed (a missing file included)
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
	data  []byte
}

func (o *observation) same(p *observation) bool {
	if o.err != nil || p.err != nil {
		return o.err != nil && p.err != nil && errors.Is(o.err, fs.ErrNotExist) == errors.Is(p.err, fs.ErrNotExist)
	}
	return o.size == p.size && o.mtime.Equal(p.mtime) && o.sum == p.sum
}

// observe reads the file the path resolves to, with the size and
// modification time of the very file read.
func (rl *reloader) observe() *observation {
	f, err := os.Open(rl.path)
	if err != nil {
		return &observation{err: fmt.Errorf("reading the policy: %w", err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return &observation{err: fmt.Errorf("reading the policy: %w", err)}
	}
	var buf bytes.Buffer
	// One byte past the bound is enough for the parser to report the size.
	if _, err := buf.ReadFrom(io.LimitReader(f, maxYAMLBytes+1)); err != nil {
		return &observation{err: fmt.Errorf("reading the policy %s: %w", rl.path, err)}
	}
	return &observation{size: st.Size(), mtime: st.ModTime(), sum: sha256.Sum256(buf.Bytes()), data: buf.Bytes()}
}

// symlinkChain returns path, every symlink met while resolving it (a
// directory on the way included, as Kubernetes' ..data is), and the path it
// ends at. A missing or looping path ends where resolution stopped, or
// after maxLinks links, as in resolvePath.
func symlinkChain(path string) []string {
	chain := []string{path}
	cur := path
	for range maxLinks {
		link, next, ok := firstSymlink(cur)
		if !ok {
			break
		}
		if link != chain[len(chain)-1] {
			chain = append(chain, link)
		}
		cur = next
	}
	if cur != path {
		chain = append(chain, cur)
	}
	return chain
}

// firstSymlink finds the first component of the absolute path p that is a
// symlink and returns it and p with it replaced by its target.
func firstSymlink(p string) (link, next string, ok bool) {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != filepath.Separator {
			continue
		}
		prefix := p[:i]
		st, err := os.Lstat(prefix)
		if err != nil {
			return "", "", false
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		dest, err := os.Readlink(prefix)
		if err != nil {
			return "", "", false
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(prefix), dest)
		}
		return prefix, filepath.Clean(dest + p[i:]), true
	}
	return "", "", false
}

// concerns reports whether an event on name can change what the path
// resolves to: it names a link of the chain, the file it ends at, or a
// directory above one of them (a `..2026_01_01` directory removed, say).
func (rl *reloader) concerns(name string) bool {
	name = filepath.Clean(name)
	for _, c := range rl.chain {
		if name == c || strings.HasPrefix(c, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// rewatch watches the directory of every name in the path's symlink chain,
// so that an edit of the target or a re-pointed link is seen too, and the
// content of the file the chain ends at. A directory that stops mattering
// is let go, and one whose watch ended (it was deleted or moved, and may be
// back) is watched again. It reports whether it added a watch: what
// changed there before the watch began was not seen, so the caller checks
// again.
func (rl *reloader) rewatch() (added bool, err error) {
	rl.chain = symlinkChain(rl.path)
	want := map[string]bool{}
	for _, c := range rl.chain {
		want[filepath.Dir(c)] = true
	}
	for d := range want {
		if rl.watched[d] && rl.w.Watching(d) {
			continue
		}
		if err := rl.w.Add(d); err != nil {
			if d == filepath.Dir(rl.path) {
				return added, fmt.Errorf("watching the policy directory %s: %w", d, err)
			}
			continue
		}
		rl.watched[d] = true
		added = true
	}
	for d := range rl.watched {
		if !want[d] {
			// Removing a watch on a directory that is gone fails; there is
			// nothing left to undo then.
			_ = rl.w.Remove(d)
			delete(rl.watched, d)
		}
	}
	// The file itself, for the writes its directory's watch leaves out. A
	// missing file has no watch: its directory's sees it come back.
	target := rl.chain[len(rl.chain)-1]
	if rl.file != "" && rl.file != target {
		_ = rl.w.Remove(rl.file)
	}
	was := rl.file == target && rl.w.Watching(target)
	rl.file = ""
	if rl.w.AddFile(target) == nil {
		rl.file = target
		// A watcher without file watches (fsnotify's) never reports one.
		added = added || (!was && rl.w.Watching(target))
	}
	return added, nil
}

// pollAlone makes the reloader follow the file by the poll alone, with
// pollOnly for its watcher, and logs why: the file could not be watched
// (followFile), or its watch ended on its own (a read of the inotify
// instance failed: run). Either way the policy is still followed, not left
// as it is.
func (rl *reloader) pollAlone(why string) {
	if rl.w != nil {
		rl.w.Close()
	}
	rl.w = pollOnly{}
	if rl.pollEvery <= 0 {
		rl.pollEvery = pollFactor * rl.debounce
	}
	rl.logger.Warn("policy watch error", "event", "policy_watch", "policy_file", rl.path,
		"error", fmt.Sprintf("%s; following the file by looking at it every %s instead", why, rl.pollEvery))
}

func (rl *reloader) run(ctx context.Context) {
	defer close(rl.store.done)
	// The first check covers what changed between the load and the watch.
	timer := time.NewTimer(rl.debounce)
	rl.poll()
	// The poll's ticks: none while pollEvery is 0 (tests), until the
	// watch ends and the poll is all there is.
	var ticker *time.Ticker
	var tick <-chan time.Time
	startPoll := func() {
		if ticker == nil && rl.pollEvery > 0 {
			ticker = time.NewTicker(rl.pollEvery)
			tick = ticker.C
		}
	}
	startPoll()
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
		rl.w.Close() // the watcher in use at the end
	}()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-tick:
			if rl.poll() {
				timer.Reset(rl.debounce)
			}
		case ev, ok := <-rl.w.events():
			if !ok {
				rl.pollAlone("the file watch ended")
				startPoll()
				continue
			}
			// Only the policy's own events move the deadline: a busy
			// neighbour (an audit log written every few milliseconds)
			// must not postpone an emergency deny forever.
			if rl.concerns(ev.Name) {
				timer.Reset(rl.debounce)
			}
		case err, ok := <-rl.w.errors():
			if !ok {
				rl.pollAlone("the file watch ended")
				startPoll()
				continue
			}
			rl.logger.Warn("policy watch error", "event", "policy_watch", "policy_file", rl.path, "error", err.Error())
			// An overflowed queue (a busy neighbour can fill it) may have
			// lost the policy's own event: look again, it costs one read.
			timer.Reset(rl.debounce)
		case <-timer.C:
			next := rl.check(time.Now())
			added, err := rl.rewatch()
			if err != nil {
				rl.logger.Warn("policy watch error", "event", "policy_watch", "policy_file", rl.path, "error", err.Error())
			}
			if added && (next == 0 || next > rl.debounce) {
				next = rl.debounce
			}
			if next > 0 {
				timer.Reset(next)
			}
		}
	}
}

// check reads the path and, once its content has held still for settle,
// swaps in its policy if it is new and valid. It returns when to look
// again (0: only at the next event).
func (rl *reloader) check(now time.Time) time.Duration {
	obs := rl.observe()
	if rl.pending == nil || !obs.same(rl.pending) {
		rl.pending, rl.pendingAt = obs, now
		if obs.err == nil && revisionOfSum(obs.sum) == rl.store.Current().Revision() {
			// What is in force already: nothing to wait for.
			rl.pending = nil
			rl.lastFailure = ""
			return 0
		}
		return rl.settle
	}
	if wait := rl.settle - now.Sub(rl.pendingAt); wait > 0 {
		return wait
	}
	rl.pending = nil
	rl.apply(obs)
	return 0
}

// apply swaps in the policy of a settled content, or logs why not.
func (rl *reloader) apply(obs *observation) {
	old := rl.store.Current()
	keep := "the last good policy " + old.Revision()
	if old == FailClosed() {
		keep = "the fail-closed policy, which allows nothing"
	}
	if obs.err != nil {
		msg := obs.err.Error()
		if errors.Is(obs.err, fs.ErrNotExist) {
			msg = "the policy file is gone; keeping " + keep
		} else {
			msg += "; keeping " + keep
		}
		rl.fail("gone:"+msg, old, "", msg, nil)
		return
	}
	rev := revisionOfSum(obs.sum)
	if rev == old.Revision() {
		rl.lastFailure = ""
		return
	}
	p, warnings, err := Parse(rl.path, obs.data, rl.opts)
	if err != nil {
		rl.fail("invalid:"+rev, old, rev, err.Error()+"\n(keeping "+keep+")", warnings)
		return
	}
	rl.lastFailure = ""
	rl.store.cur.Store(p)
	rl.store.reloaded(true)
	rl.logger.Info("policy reload",
		"event", "policy_reload",
		"policy_file", rl.path,
		"ok", true,
		"revision", p.Revision(),
		"old_revision", old.Revision(),
		"warnings", warningStrings(warnings))
	if rl.onChange != nil {
		rl.onChange(old, p)
	}
}

// fail logs a reload that changed nothing. revision stays the one in
// force, as on every line of the audit log; rejected_revision is the
// content refused (empty when there was none to read), so that a security
// team can tell which edit did not apply.
func (rl *reloader) fail(key string, old *Policy, rejected, msg string, warnings []Warning) {
	if key == rl.lastFailure {
		return
	}
	rl.lastFailure = key
	rl.store.reloaded(false)
	rl.logger.Error("policy reload",
		"event", "policy_reload",
		"policy_file", rl.path,
		"ok", false,
		"revision", old.Revision(),
		"old_revision", old.Revision(),
		"rejected_revision", rejected,
		"error", msg,
		"warnings", warningStrings(warnings))
}

func warningStrings(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}
