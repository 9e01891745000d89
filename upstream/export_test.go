package upstream

// Hooks for the external tests (package upstream_test), which cannot reach
// unexported fields: they import upstreamtest, which imports this package.

// ConnectionOf returns the connection behind a session.
func ConnectionOf(s *Session) Connection { return s.up }

// PID returns the process id of a session started by an ExecLauncher, or 0.
func PID(s *Session) int {
	if p, ok := s.up.(*execProcess); ok && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}
