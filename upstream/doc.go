// Package upstream runs the MCP servers behind the gate: it reads the
// servers file, starts each server lazily on first need (one start however
// many callers ask), initialises it, restarts it after a crash with backoff,
// and stops it when idle.
//
// A server's environment is the gate's own minus secret-looking variables,
// plus what the servers file gives it explicitly. A server that fails to
// start or dies is reported with its exit status and the tail of its stderr,
// and never takes the other servers down with it.
//
// The pool keeps one child per (key, server), for an opaque key the caller
// chooses: the proxy keys children by identity and upstream-facing
// capabilities, so callers that must not share a child never do.
//
// The pool knows servers through a Launcher, which returns a Connection: an
// rpc.Transport of whole messages plus the lifecycle of what serves it.
// ExecLauncher runs a child process behind newline-delimited pipes; a
// server reached another way (HTTP) is another Launcher.
package upstream
