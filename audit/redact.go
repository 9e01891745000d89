package audit

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Logs and audit lines never carry the bytes of a message, an argument or
// a result, malformed ones included: they are often shipped elsewhere, and
// arguments and results hold secrets (tokens, file contents). What they
// carry instead is a description: the size and a keyed digest (the same
// bytes give the same digest within one run, so two lines about one
// payload can be matched), and, for a parse error, the position.

// Payload describes untrusted bytes for a log line: their size and keyed
// digest, never the bytes.
func Payload(b []byte) slog.Value {
	return slog.GroupValue(slog.Int("bytes", len(b)), slog.String("digest", Digest(b)))
}

// PayloadString is Payload for a string, as one word for a message text:
// "<12 bytes hmac-sha256:…>".
func PayloadString(s string) string {
	return fmt.Sprintf("<%d bytes %s>", len(s), Digest([]byte(s)))
}

// Redact replaces every double-quoted string in s by its description. The
// gate quotes untrusted text wherever it names it in a message (the
// guard's snippets, a host's odd answer, a duplicate key), so a detail
// meant for a human on the wire keeps its words and loses the untrusted
// ones on its way to a log. An unterminated quote takes the rest of s.
func Redact(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := closingQuote(s, i)
		if j < 0 {
			b.WriteString(PayloadString(s[i:]))
			return b.String()
		}
		quoted := s[i : j+1]
		if u, err := strconv.Unquote(quoted); err == nil {
			b.WriteString(PayloadString(u))
		} else {
			b.WriteString(PayloadString(quoted))
		}
		s = s[j+1:]
	}
}

// closingQuote finds the quote that ends the string opened at s[i], past
// backslash escapes, or -1.
func closingQuote(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}
