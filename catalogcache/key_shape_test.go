package catalogcache

import (
	"regexp"
	"strings"
	"testing"
)

// validKey is the regular expression it replaced, checked by hand.
func TestValidKeyIsTheShape(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex := strings.Repeat("0123456789abcdef", 4)
	cases := []string{"", hex, hex[:63], hex + "0", strings.ToUpper(hex), "../" + hex[3:], hex[:63] + "g", hex[:63] + "\n", hex[:63] + "/", hex[:63] + "`", hex[:63] + ":", hex[:63] + "@", hex[:63] + "\xff"}
	for c := 0; c < 256; c++ {
		cases = append(cases, hex[:63]+string(rune(c)), string([]byte{byte(c)})+hex[1:])
	}
	for _, k := range cases {
		if got, want := validKey(k), shape.MatchString(k); got != want {
			t.Errorf("validKey(%q) = %v, the shape says %v", k, got, want)
		}
	}
}
