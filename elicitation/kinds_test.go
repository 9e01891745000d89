package elicitation

// The per-kind questions the tests of each kind ask of a state string,
// written over the one path the gate uses (Verify once, then Holds, Use,
// Of, KindError), so that those tests exercise that path.

func (r *Rounds) verifyKind(s string, k StateKind) (*State, error) {
	st, err := r.Verify(s)
	if err != nil {
		return nil, err
	}
	return st.Of(k)
}

func (r *Rounds) parseState(s string) (*State, error)   { return r.verifyKind(s, ApprovalState) }
func (r *Rounds) parseParked(s string) (*State, error)  { return r.verifyKind(s, ParkedState) }
func (r *Rounds) parseRelayed(s string) (*State, error) { return r.verifyKind(s, RelayedState) }

// IsParked reports whether s is a parked question's state this gate wrote,
// and which call and round it names.
func (r *Rounds) IsParked(s string) (call string, round int, ok bool) {
	st, err := r.parseParked(s)
	if err != nil {
		return "", 0, false
	}
	return st.Call, st.Round, true
}

// ParkedError says why s is not a parked question's state.
func (r *Rounds) ParkedError(s string) error {
	st, err := r.Verify(s)
	return KindError(st, err, ParkedState)
}

// CheckParked verifies s for b without using it up.
func (r *Rounds) CheckParked(s string, b Binding) (string, int, error) {
	st, err := r.parseParked(s)
	if err == nil {
		err = r.Holds(st, b)
	}
	if err != nil {
		return "", 0, err
	}
	return st.Call, st.Round, nil
}

// RedeemParked verifies s for b and marks it used.
func (r *Rounds) RedeemParked(s string, b Binding) (string, int, error) {
	st, err := r.parseParked(s)
	if err == nil {
		err = r.Use(st, b)
	}
	if err != nil {
		return "", 0, err
	}
	return st.Call, st.Round, nil
}

// IsRelayed reports whether s is a relayed round's state this gate wrote.
func (r *Rounds) IsRelayed(s string) bool {
	_, err := r.parseRelayed(s)
	return err == nil
}

// CheckRelayed verifies s for b without using it up.
func (r *Rounds) CheckRelayed(s string, b Binding) (RelayedRound, error) {
	st, err := r.parseRelayed(s)
	if err == nil {
		err = r.Holds(st, b)
	}
	if err != nil {
		return RelayedRound{}, err
	}
	return st.Relayed, nil
}

// RedeemRelayed verifies s for b and marks it used.
func (r *Rounds) RedeemRelayed(s string, b Binding) (RelayedRound, error) {
	st, err := r.parseRelayed(s)
	if err == nil {
		err = r.Use(st, b)
	}
	if err != nil {
		return RelayedRound{}, err
	}
	return st.Relayed, nil
}

// RelayedError says why s is not a relayed round's state.
func (r *Rounds) RelayedError(s string) error {
	st, err := r.Verify(s)
	return KindError(st, err, RelayedState)
}
