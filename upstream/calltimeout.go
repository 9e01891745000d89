package upstream

import (
	"bytes"
	"encoding/json"
	"time"
)

// DefaultCallTimeout bounds a call forwarded to a server whose entry sets
// no "callTimeout". It runs from the forward to the answer (starting the
// server, and waiting out its restart backoff, included); a question to
// the human before it has its own timeout, which is not counted.
const DefaultCallTimeout = 10 * time.Minute

// parseCallTimeout reads an entry's "callTimeout": a Go duration string
// ("90s", "10m", "1h30m"), positive. Anything else is an error naming the
// key, as for every other key: a typo must not quietly leave calls without
// a bound, or cut every call short.
func parseCallTimeout(raw json.RawMessage, bad func(string, ...any)) time.Duration {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return 0
	}
	const want = `expected a Go duration string such as "30s", "10m" or "1h30m"`
	var s string
	if t[0] != '"' || json.Unmarshal(t, &s) != nil {
		bad(`"callTimeout" is %s; %s`, jsonKind(t), want)
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		bad(`"callTimeout" %q is not a duration; %s`, s, want)
		return 0
	case d <= 0:
		bad(`"callTimeout" %q must be more than zero; %s`, s, want)
		return 0
	}
	return d
}

// Timeout is the bound of one call to the server: its callTimeout, or
// DefaultCallTimeout.
func (c Config) Timeout() time.Duration {
	if c.CallTimeout > 0 {
		return c.CallTimeout
	}
	return DefaultCallTimeout
}

// CallTimeout is the bound of one call to server (Config.Timeout), or
// DefaultCallTimeout for a server the pool does not know.
func (p *Pool) CallTimeout(server string) time.Duration {
	return p.configs[server].Timeout()
}
