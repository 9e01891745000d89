//go:build !unix

package hostconfig

import "io/fs"

// notUsers is false where Unix owners and modes do not apply.
func notUsers(fs.FileInfo) bool { return false }
