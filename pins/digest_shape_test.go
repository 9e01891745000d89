package pins

import (
	"regexp"
	"strings"
	"testing"
)

// validDigest is the regular expression it replaced, checked by hand.
func TestValidDigestIsTheShape(t *testing.T) {
	shape := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	hex := strings.Repeat("0123456789abcdef", 4)
	cases := []string{"", "sha256:", "sha256:" + hex, "sha256:" + hex[:63], "sha256:" + hex + "0", "SHA256:" + hex,
		"sha256:" + strings.ToUpper(hex), "sha512:" + hex, "sha256" + hex + "0", " sha256:" + hex[1:], "sha256:" + hex[:63] + "\n"}
	for c := 0; c < 256; c++ {
		cases = append(cases, "sha256:"+hex[:63]+string([]byte{byte(c)}), "sha256:"+string([]byte{byte(c)})+hex[1:], string([]byte{byte(c)})+"ha256:"+hex)
	}
	for _, d := range cases {
		if got, want := validDigest(d), shape.MatchString(d); got != want {
			t.Errorf("validDigest(%q) = %v, the shape says %v", d, got, want)
		}
	}
}
