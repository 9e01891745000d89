package naming

import (
	"strings"
	"testing"
)

func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		gate string
		want int
	}{
		{"gate", 53},
		{DefaultGateName, 53},
		{"", 57},
		{"my-gate", 50},
		{strings.Repeat("g", MaxGateNameLen), MinBudget},
	} {
		if got := Budget(tc.gate); got != tc.want {
			t.Errorf("Budget(%q) = %d, want %d", tc.gate, got, tc.want)
		}
		if got := len("mcp__"+tc.gate+"__") + Budget(tc.gate); got != 64 {
			t.Errorf("prefix plus budget for %q = %d, want 64", tc.gate, got)
		}
	}
}

func TestValidateGateName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr string // "" for valid
	}{
		{"gate", ""},
		{"my-gate", ""},
		{"Gate_1", ""},
		{"a", ""},
		{strings.Repeat("g", MaxGateNameLen), ""},
		{strings.Repeat("g", MaxGateNameLen+1), "expected at most 37 characters"},
		{"", "is empty"},
		{"my gate", `' ' at byte 2`},
		{"gäte", `'ä' at byte 1`},
		{"gate\xff", "invalid UTF-8 byte 0xff at byte 4"},
		{"my.gate", `'.' at byte 2`},
		{"my__gate", `"__" inside`},
		{"_gate", "'_' at an end"},
		{"gate_", "'_' at an end"},
	} {
		err := ValidateGateName(tc.name)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateGateName(%q) = %v, want nil", tc.name, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("ValidateGateName(%q) = nil, want error containing %q", tc.name, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("ValidateGateName(%q) = %q, want it to contain %q", tc.name, err, tc.wantErr)
		}
		if err == nil && Budget(tc.name) < MinBudget {
			t.Errorf("ValidateGateName(%q) accepted a budget of %d", tc.name, Budget(tc.name))
		}
	}
}

func TestValidateServerKey(t *testing.T) {
	for _, tc := range []struct {
		key     string
		budget  int
		wantErr string
	}{
		{"github", 53, ""},
		{"a", 53, ""},
		{"0x", 53, ""},
		{"a-b-", 53, ""},
		{"sequential-thinking", 53, ""},
		{strings.Repeat("k", 34), 53, ""},
		{strings.Repeat("k", 35), 53, "is 35 characters; expected at most 34 under a wire-name budget of 53"},
		{"a", MinBudget, ""},
		{"ab", MinBudget, "expected at most 1"},
		{"a", MinBudget - 1, "budget is 19; expected at least 20"},
		{"", 53, "is empty"},
		{"-a", 53, `'-' at byte 0`},
		{"GitHub", 53, `'G' at byte 0`},
		{"a_b", 53, `'_' at byte 1`},
		{"a.b", 53, `'.' at byte 1`},
		{"a:b", 53, `':' at byte 1`},
		{"émoji", 53, `'é' at byte 0`},
		{"a\x00", 53, `'\x00' at byte 1`},
	} {
		err := ValidateServerKey(tc.key, tc.budget)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateServerKey(%q, %d) = %v, want nil", tc.key, tc.budget, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("ValidateServerKey(%q, %d) = nil, want error containing %q", tc.key, tc.budget, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("ValidateServerKey(%q, %d) = %q, want it to contain %q", tc.key, tc.budget, err, tc.wantErr)
		}
	}
}

// A server key that passes validation leaves room for the longest suffix
// with "<server>__" intact: the arithmetic behind guarantee 4.
func TestServerKeyRoomHoldsLongestSuffix(t *testing.T) {
	for budget := MinBudget; budget <= 64; budget++ {
		key := strings.Repeat("k", MaxServerKeyLen(budget))
		if err := ValidateServerKey(key, budget); err != nil {
			t.Fatalf("budget %d: longest key rejected: %v", budget, err)
		}
		k := Key{key, strings.Repeat("t", 100)}
		head := wantHashed(t, k, maxHashLen, budget)
		if !strings.HasPrefix(head, key+"__") {
			t.Fatalf("budget %d: %q lost the server prefix at the longest suffix", budget, head)
		}
	}
}
