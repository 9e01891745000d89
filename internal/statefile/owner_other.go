//go:build !unix

package statefile

import "io/fs"

// ownerKnown is false where Unix owners and modes do not apply (Windows:
// the directory's ACL, inherited from the user's profile, is what keeps
// others out).
const ownerKnown = false

// OwnerUID cannot tell here: see owner_unix.go.
func OwnerUID(fs.FileInfo) (int, bool) { return 0, false }
