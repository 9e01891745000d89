//go:build !unix

package approvals

import "io/fs"

// ownerUID cannot tell here: the directory is refused.
func ownerUID(fs.FileInfo) (int, bool) { return 0, false }
