package rawjson

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// UniqueKeys compares the keys of a small object pairwise and those of a
// larger one in a map: a duplicate is found on either side of the switch,
// and across it, as written or under case folding.
func TestUniqueKeysAcrossFewKeys(t *testing.T) {
	obj := func(keys ...string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%d", k, i)
		}
		b.WriteByte('}')
		return b.String()
	}
	keys := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("k%d", i))
		}
		return out
	}
	for n := 1; n <= 2*fewKeys+2; n++ {
		if err := UniqueKeys([]byte(obj(keys(n)...))); err != nil {
			t.Fatalf("%d distinct keys: %v", n, err)
		}
		for dupOf := range n {
			for _, dup := range []string{fmt.Sprintf("k%d", dupOf), fmt.Sprintf("K%d", dupOf)} {
				in := obj(append(keys(n), dup)...)
				var ke *KeyError
				if err := UniqueKeys([]byte(in)); !errors.As(err, &ke) || ke.Key != dup || ke.First != fmt.Sprintf("k%d", dupOf) {
					t.Fatalf("%s: got %v, want a KeyError for %q after %q", in, err, dup, fmt.Sprintf("k%d", dupOf))
				}
			}
		}
	}
	// Folding beyond ASCII, and escapes, on both sides of the switch.
	for _, n := range []int{0, fewKeys + 1} {
		for _, pair := range [][2]string{{`"kind"`, `"\u212aind"`}, {`"name"`, `"n\u0061me"`}, {`"ſ"`, `"S"`}} {
			in := "{" + strings.TrimSuffix(strings.TrimPrefix(obj(keys(n)...), "{"), "}")
			if n > 0 {
				in += ","
			}
			in += pair[0] + ":1," + pair[1] + ":2}"
			if err := UniqueKeys([]byte(in)); err == nil {
				t.Errorf("%s: no error", in)
			}
		}
	}
}
