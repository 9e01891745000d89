//go:build !linux

package upstream

import "os"

// unreadInput cannot tell, outside Linux, whether a child has read its
// input: a pipe's write end answers FIONREAD with its own (empty) buffer
// on the BSDs. The probe then times a server from the moment it is sent
// the probe (probeContext).
func unreadInput(*os.File) (int, bool) { return 0, false }
