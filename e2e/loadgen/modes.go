package loadgen

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// RunModes runs this command again once per CPU mode of cpu ("pinned",
// "unpinned" or "both"), each copy with marker=1 in its environment (so
// that it measures instead of re-running) and GOMAXPROCS unset, so that Go
// picks it at the copy's start from the CPUs it may use: 1 when pinned
// under `taskset -c 0`, as in a one-CPU container. A copy gets -cpu MODE,
// then fixed, then every flag set on this command but those named in skip.
func RunModes(cpu, marker string, fixed []string, skip ...string) error {
	var modes []string
	switch cpu {
	case "both":
		modes = []string{"pinned", "unpinned"}
	case "pinned", "unpinned":
		modes = []string{cpu}
	default:
		return fmt.Errorf("-cpu %q: want pinned, unpinned or both", cpu)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	skipped := map[string]bool{"cpu": true}
	for _, s := range skip {
		skipped[s] = true
	}
	for _, mode := range modes {
		args := append([]string{self, "-cpu", mode}, fixed...)
		flag.Visit(func(f *flag.Flag) {
			if !skipped[f.Name] {
				args = append(args, "-"+f.Name+"="+f.Value.String())
			}
		})
		if mode == "pinned" {
			if _, err := exec.LookPath("taskset"); err != nil {
				return fmt.Errorf("a pinned run needs taskset (util-linux), or run -cpu unpinned: %w", err)
			}
			args = append([]string{"taskset", "-c", "0"}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(WithoutGOMAXPROCS(os.Environ()), marker+"=1")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s run: %w", mode, err)
		}
	}
	return nil
}

// WithoutGOMAXPROCS is env without its GOMAXPROCS setting.
func WithoutGOMAXPROCS(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			out = append(out, e)
		}
	}
	return out
}
