package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// reservedHeaders are set by the transports themselves: an entry that set
// one would break the session or smuggle a second body framing.
var reservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Transfer-Encoding",
}

// ValidateRemote checks the url and headers of an http or sse entry, after
// ${VAR} expansion. Its errors name the header, never its value, and do not
// quote the url: either may carry a token.
func ValidateRemote(rawURL string, headers map[string]string) error {
	return errors.Join(remoteProblems(rawURL, headers)...)
}

// remoteProblems lists what is wrong with an http or sse entry's url and
// headers, one error each.
func remoteProblems(rawURL string, headers map[string]string) []error {
	var errs []error
	u, err := url.Parse(rawURL)
	switch {
	case err != nil:
		errs = append(errs, errors.New(`"url" is not a valid URL; expected http://host[:port]/path or https://…`))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf(`"url" has the scheme %q; expected http or https`, shortScheme(u.Scheme)))
	case u.Host == "":
		errs = append(errs, errors.New(`"url" has no host; expected http://host[:port]/path or https://…`))
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := headers[k]
		switch {
		case !validHeaderName(k):
			errs = append(errs, fmt.Errorf("headers: %q is not a valid header name", k))
		case isReservedHeader(k):
			errs = append(errs, fmt.Errorf("headers: %q is set by the gate's transport and cannot be given", http.CanonicalHeaderKey(k)))
		case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }):
			errs = append(errs, fmt.Errorf("headers.%s: the value holds a line break or another control character", k))
		}
	}
	return errs
}

func isReservedHeader(k string) bool {
	c := http.CanonicalHeaderKey(k)
	for _, r := range reservedHeaders {
		if c == r {
			return true
		}
	}
	return false
}

// validHeaderName reports whether k is an HTTP token (RFC 9110 tchar).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func shortScheme(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}
