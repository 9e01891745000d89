package approvals

import (
	"fmt"
	"os"
)

// guardian decides whether a peer may talk to the surface. The protected
// processes are the gate, its parent (the host, or a wrapper the host ran:
// sh -c, npx), and every further ancestor in the same login session that
// is not the session's leader (the host above a wrapper). A peer is
// refused when one of them is the peer or one of its ancestors, or when it
// shares the gate's or the host's login session. What the host runs (the
// model's shell above all, with or without setsid) descends from the host,
// so it is refused; a human in another terminal is not. The session's
// leader (the shell the host was started from) is not protected: other
// terminals do not descend from it, and the session check covers its
// other children.
type guardian struct {
	protected        map[int]bool
	gateSID, hostSID int // session ids; 0 when unknown
}

func newGuardian() guardian {
	gate, parent := os.Getpid(), os.Getppid()
	g := guardian{protected: map[int]bool{gate: true}}
	_, g.gateSID, _ = procStat(gate)
	if parent <= 1 {
		return g
	}
	g.protected[parent] = true
	pp, sid, err := procStat(parent)
	if err != nil {
		return g
	}
	g.hostSID = sid
	for range maxAncestry {
		if pp <= 1 || pp == sid {
			break
		}
		next, psid, err := procStat(pp)
		if err != nil || psid != sid {
			break
		}
		g.protected[pp] = true
		pp = next
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
		if g.protected[p] {
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
