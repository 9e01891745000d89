package approvals

import (
	"os"
	"testing"
)

// An ancestry taken ahead protects what newGuardian protects at the moment
// it is taken: the gate and its parent (the host) at least.
func TestTakeAncestryProtectsTheGateAndItsParent(t *testing.T) {
	a := TakeAncestry()
	for _, pid := range []int{os.Getpid(), os.Getppid()} {
		if pid > 1 && !a.g.protected[pid] {
			t.Errorf("pid %d is not protected: %+v", pid, a.g)
		}
	}
}
