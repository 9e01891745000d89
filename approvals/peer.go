package approvals

import (
	"fmt"
	"os"
)

// guardian decides whether a peer may talk to the surface: the gate's own
// process, and the host that started it, must be neither the peer nor any
// of its ancestors, and the peer must not share their login session. What
// the host runs (the model's shell above all) descends from the host, so
// it is refused; a human in another terminal is not.
type guardian struct {
	gate, host       int // pids
	gateSID, hostSID int // session ids; 0 when unknown
}

func newGuardian() guardian {
	g := guardian{gate: os.Getpid(), host: os.Getppid()}
	_, g.gateSID, _ = procStat(g.gate)
	if g.host > 1 {
		_, g.hostSID, _ = procStat(g.host)
	}
	return g
}

// maxAncestry bounds the walk up /proc; process trees are far shallower.
const maxAncestry = 4096

// check returns nil when the peer with pid and uid may list and answer.
func (g guardian) check(pid, uid int) error {
	if uid != os.Getuid() {
		return fmt.Errorf("refused: the peer runs as uid %d; only uid %d may answer this gate", uid, os.Getuid())
	}
	if pid <= 0 {
		return fmt.Errorf("refused: the peer's process is not visible to the gate")
	}
	_, sid, err := procStat(pid)
	if err != nil {
		return fmt.Errorf("refused: cannot read the peer's process: %v", err)
	}
	if sid != 0 && (sid == g.hostSID || sid == g.gateSID) {
		return fmt.Errorf("refused: the answering process is in the login session of the host that runs this gate; answer from another terminal")
	}
	p := pid
	for range maxAncestry {
		if p == g.gate || (p == g.host && g.host > 1) {
			return fmt.Errorf("refused: the answering process descends from the host that runs this gate; answer from another terminal")
		}
		if p <= 1 {
			return nil
		}
		pp, _, err := procStat(p)
		if err != nil {
			return fmt.Errorf("refused: cannot read the ancestry of the peer: %v", err)
		}
		p = pp
	}
	return fmt.Errorf("refused: the peer's ancestry is deeper than %d processes", maxAncestry)
}
