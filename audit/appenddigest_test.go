package audit

import "testing"

// AppendDigest appends exactly Digest's string, after whatever dst holds.
func TestAppendDigest(t *testing.T) {
	args := []byte(`{"a":1}`)
	got := string(AppendDigest([]byte("id-7"), args))
	if want := "id-7" + Digest(args); got != want {
		t.Fatalf("AppendDigest = %q, want %q", got, want)
	}
	if len(Digest(args)) != DigestLen {
		t.Fatalf("len(Digest) = %d, DigestLen = %d", len(Digest(args)), DigestLen)
	}
}
