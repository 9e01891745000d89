package policy

// ReloadObserver is told the outcome of every reload a watching Store
// applies or refuses (package metrics counts them). A refused content is
// reported once, as it is logged once, not at every event that reads it
// again.
type ReloadObserver interface {
	PolicyReloaded(ok bool)
}

// reloadHook holds a ReloadObserver for an atomic.Pointer.
type reloadHook struct{ o ReloadObserver }

// Observe makes the store tell o of every reload from now on; nil stops
// it. A static store never reloads. What is in force is Current at any
// time: the revision needs no hook.
func (s *Store) Observe(o ReloadObserver) {
	if o == nil {
		s.obs.Store(nil)
		return
	}
	s.obs.Store(&reloadHook{o})
}

// reloaded reports one reload outcome to the observer, if any.
func (s *Store) reloaded(ok bool) {
	if h := s.obs.Load(); h != nil {
		h.o.PolicyReloaded(ok)
	}
}
