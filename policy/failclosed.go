package policy

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
)

// FailClosedSource is the Source of the policy that serves while the
// policy file cannot be loaded.
const FailClosedSource = "fail-closed (the policy file did not load)"

// failClosedYAML denies, and so hides, every tool, prompt and resource;
// sampling is denied when no rule allows it.
const failClosedYAML = `version: 1
fallback: deny
deny: ["mcp:*:*", "prompt:*:*", "resource:*:*"]
`

var failClosed = sync.OnceValue(func() *Policy {
	p, _, err := Parse(FailClosedSource, []byte(failClosedYAML), Options{})
	if err != nil {
		panic(fmt.Sprintf("policy: the fail-closed policy is invalid:\n%v", err))
	}
	return p
})

// FailClosed returns the policy that serves while the policy file is
// missing or invalid: it allows nothing and lists nothing.
func FailClosed() *Policy { return failClosed() }

// WatchFailClosed is Watch for a gate that must stay up when its policy
// file does not load (a host shows the error; an exit would show only
// "connection closed"). When the file loads it is Watch. When it does not,
// the store holds FailClosed and the error is returned with it; the file is
// watched all the same, and the first valid content replaces FailClosed as
// any reload does (onChange is called with FailClosed as the old policy).
// The store is nil only when not even the file's directory can be watched.
func WatchFailClosed(ctx context.Context, path string, opts Options, logger *slog.Logger, onChange func(old, new *Policy)) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return NewStatic(FailClosed()), fmt.Errorf("policy file %s: %w", path, err)
	}
	p, _, loadErr := LoadFile(abs, opts)
	if loadErr == nil {
		return followFile(ctx, abs, p, opts, logger, onChange, watchAfter(reloadDebounce))
	}
	s, err := followFile(ctx, abs, FailClosed(), opts, logger, onChange, watchAfter(reloadDebounce))
	if err != nil {
		return NewStatic(FailClosed()), fmt.Errorf("%w (and it cannot be watched for a fix: %v)", loadErr, err)
	}
	return s, loadErr
}
