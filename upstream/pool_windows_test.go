//go:build windows

package upstream_test

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// errNoProcess is what probePID returns once a process is gone.
var errNoProcess = errors.New("no such process")

// stillActive is the exit code GetExitCodeProcess reports for a process
// that is still running (STILL_ACTIVE).
const stillActive = 259

// probePID is Windows' counterpart of kill(pid, 0): nil while pid names a
// running process, errNoProcess once it has exited. An exited process can
// still be opened while anyone holds a handle to it, so its exit code
// tells, not the open alone; a pid nobody holds fails to open with
// ERROR_INVALID_PARAMETER.
func probePID(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return errNoProcess
	}
	if err != nil {
		return fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return fmt.Errorf("exit code of process %d: %w", pid, err)
	}
	if code != stillActive {
		return errNoProcess
	}
	return nil
}
