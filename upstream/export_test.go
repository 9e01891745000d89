package upstream

// Hooks for the external tests (package upstream_test), which cannot reach
// unexported fields: they import upstreamtest, which imports this package.

// ProcessOf returns the process behind a session.
func ProcessOf(s *Session) Process { return s.proc }

// PID returns the process id of a session started by an ExecLauncher, or 0.
func PID(s *Session) int {
	if p, ok := s.proc.(*execProcess); ok && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}
