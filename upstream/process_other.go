//go:build !unix

package upstream

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func orphanGuard(*exec.Cmd) (release func()) { return func() {} }

func terminate(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func killGroup(cmd *exec.Cmd) { terminate(cmd) }
