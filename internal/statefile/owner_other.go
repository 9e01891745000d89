//go:build !unix

package statefile

import "io/fs"

// ownerKnown is false where Unix owners and modes do not apply (Windows:
// the directory's ACL, inherited from the user's profile, is what keeps
// others out).
const ownerKnown = false

func ownerUID(fs.FileInfo) (int, bool) { return 0, false }
