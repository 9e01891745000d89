package upstream

// RunningEra is the protocol revision the running child of key for server
// was opened at (its Session.ProtocolVersion), or "" when none is running
// now. It starts nothing and waits for nothing. The proxy reads it before
// a 2026-07-28 host's call: a child of that revision asks only by its
// result (input required), never by a request of its own mid-call, so the
// call needs none of the machinery that lets it wait on the host beside
// its request (proxy/parked.go).
func (p *Pool) RunningEra(key, server string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	sl := p.slots[slotKey{key, server}]
	if sl == nil || sl.sess == nil {
		return ""
	}
	select {
	case <-sl.sess.Done():
		return "" // dead: the next call starts another, of whichever era
	default:
		return sl.sess.ProtocolVersion
	}
}
