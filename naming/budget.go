package naming

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	// DefaultGateName is the name hosts give the gate unless told otherwise.
	DefaultGateName = "gate"

	// MaxPrefixedLen is the cap Claude and Codex put on a prefixed tool name,
	// "mcp__<gate>__<wire>".
	MaxPrefixedLen = 64

	// HashLen is the number of hex digits in the shortest hash suffix.
	HashLen = 8

	// MinToolRoom is the number of characters of the tool name that a hashed
	// wire name keeps at least, so a human reading an approval prompt or a
	// host's tool list can still tell the tool apart.
	MinToolRoom = 8

	// MinBudget is the smallest budget that holds a one-character server key,
	// "__", MinToolRoom characters of tool name, "_" and HashLen hex digits.
	MinBudget = 1 + len(serverSep) + MinToolRoom + 1 + HashLen

	// MaxGateNameLen is the longest gate name that leaves MinBudget.
	MaxGateNameLen = MaxPrefixedLen - len(hostPrefix) - len(serverSep) - MinBudget

	// maxHashLen bounds suffix extension. Extension eats into the tool room
	// only: a server key that passes ValidateServerKey leaves MinToolRoom +
	// HashLen characters after "<server>__", so even the longest suffix
	// keeps "<server>__" intact (guarantee 4 in the package doc), and 16
	// digits fit a uint64 for the last-resort search.
	maxHashLen = HashLen + MinToolRoom

	hostPrefix = "mcp__"
	serverSep  = "__"
)

// Budget returns the length a wire name may have under the gate name:
// 64 - len("mcp__"+gateName+"__"). It does not validate the name; a result
// below MinBudget is unusable (see ValidateGateName).
func Budget(gateName string) int {
	return MaxPrefixedLen - len(hostPrefix) - len(gateName) - len(serverSep)
}

// ValidateGateName reports whether name can be the gate's name: non-empty,
// over [A-Za-z0-9_-], and short enough to leave a budget of at least
// MinBudget. It also refuses "__" inside the name and '_' at either end:
// hosts split "mcp__<gate>__<tool>" on "__", so such a name would make the
// host attribute the gate's tools to a different server in its permission
// rules.
func ValidateGateName(name string) error {
	if name == "" {
		return fmt.Errorf("gate name is empty; expected 1 to %d characters of [A-Za-z0-9_-]", MaxGateNameLen)
	}
	if i := firstNonWire(name); i >= 0 {
		return fmt.Errorf("gate name %q has %s at byte %d; expected only [A-Za-z0-9_-]", name, describeAt(name, i), i)
	}
	if strings.Contains(name, serverSep) || name[0] == '_' || name[len(name)-1] == '_' {
		return fmt.Errorf("gate name %q has \"__\" inside or '_' at an end; expected neither, because hosts split \"mcp__<gate>__<tool>\" on \"__\"", name)
	}
	if len(name) > MaxGateNameLen {
		return fmt.Errorf("gate name %q is %d characters, which leaves a wire-name budget of %d; expected at most %d characters (a budget of at least %d)",
			name, len(name), Budget(name), MaxGateNameLen, MinBudget)
	}
	return nil
}

// ValidateServerKey reports whether key can name a server under budget: it
// must match ^[a-z0-9][a-z0-9-]*$ (no '_', so the first '_' of a wire name
// ends the server) and leave room after it for "__", MinToolRoom characters
// of tool name and a hash suffix ("_" and HashLen hex digits).
func ValidateServerKey(key string, budget int) error {
	if budget < MinBudget {
		return fmt.Errorf("wire-name budget is %d; expected at least %d", budget, MinBudget)
	}
	if key == "" {
		return fmt.Errorf("server key is empty; expected ^[a-z0-9][a-z0-9-]*$")
	}
	if i := firstNonKey(key); i >= 0 {
		return fmt.Errorf("server key %q has %s at byte %d; expected lowercase letters, digits and '-', starting with a letter or digit (^[a-z0-9][a-z0-9-]*$)",
			key, describeAt(key, i), i)
	}
	if limit := MaxServerKeyLen(budget); len(key) > limit {
		return fmt.Errorf("server key %q is %d characters; expected at most %d under a wire-name budget of %d (room for \"__\", %d characters of tool name and a %d-character hash suffix)",
			key, len(key), limit, budget, MinToolRoom, 1+HashLen)
	}
	return nil
}

// MaxServerKeyLen is the longest server key ValidateServerKey accepts under
// budget.
func MaxServerKeyLen(budget int) int {
	return budget - len(serverSep) - MinToolRoom - 1 - HashLen
}

func isWireByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// firstNonWire returns the index of the first byte outside [A-Za-z0-9_-],
// or -1.
func firstNonWire(s string) int {
	for i := 0; i < len(s); i++ {
		if !isWireByte(s[i]) {
			return i
		}
	}
	return -1
}

// firstNonKey returns the index of the first byte that breaks
// ^[a-z0-9][a-z0-9-]*$, or -1.
func firstNonKey(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 {
			continue
		}
		return i
	}
	return -1
}

func isServerKey(s string) bool { return s != "" && firstNonKey(s) < 0 }

// describeAt names the character at byte i for an error message, quoting it
// so control and invisible characters show.
func describeAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("invalid UTF-8 byte %#02x", s[i])
	}
	return fmt.Sprintf("%q", r)
}
