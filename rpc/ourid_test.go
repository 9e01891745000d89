package rpc

import (
	"encoding/json"
	"strconv"
	"testing"
)

// ourID matches a response to a pending call exactly as comparing idKeys
// with the decimal id the call was sent with did: 7, 7.0 and 7e0 are call
// 7; a string, a fraction, a negative number or zero are no call of ours.
func TestOurIDMatchesIDKey(t *testing.T) {
	ids := []string{`1`, `7`, `42`, `7.0`, `7e0`, `0.7e1`, `70E-1`, `7.5`, `-7`, `0`, `-0`, `"7"`, `""`, `1e2`,
		`123456789012345678`, `1234567890123456789`, `12345678901234567890`, `9007199254740993`, `1.5e300`, `-1e2`, `1e-2`}
	for _, s := range ids {
		if !json.Valid([]byte(s)) {
			t.Fatalf("bad test id %s", s)
		}
		key := idKey(json.RawMessage(s))
		n, ok := ourID(json.RawMessage(s))
		// Our ids are 1, 2, 3...: a key matches one when it is its decimal form.
		k, err := strconv.ParseInt(key, 10, 64)
		want := err == nil && k > 0 && strconv.FormatInt(k, 10) == key
		if ok != want || ok && n != k {
			t.Errorf("ourID(%s) = %d, %v; idKey %q matches call %d: %v", s, n, ok, key, k, want)
		}
	}
}
