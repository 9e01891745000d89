package rawjson

// Delete returns a copy of obj without member key (every occurrence), and
// whether there was one; every other byte is kept as it was. obj itself is
// not modified. On input that is not an object it returns obj unchanged and
// false.
func Delete(obj []byte, key string) ([]byte, bool) {
	out := obj
	found := false
	for {
		// One occurrence per pass: the offsets of the next are found in
		// the bytes the previous removal left.
		prevEnd, start, end, next := -1, -1, -1, -1
		first := true
		err := Members(out, func(m Member) bool {
			if start >= 0 {
				next = m.Start
				return false
			}
			if m.Key == key {
				start, end = m.Start, m.End
				if first {
					prevEnd = -1
				}
				return true
			}
			first = false
			prevEnd = m.End
			return true
		})
		if err != nil || start < 0 {
			return out, found
		}
		var cut [2]int
		if prevEnd >= 0 {
			// Not the first member: remove from the end of the one before
			// (the comma, the key, the value).
			cut = [2]int{prevEnd, end}
		} else {
			// The first: remove from just after the brace to just before
			// the next member's key, or to the value's end when alone.
			open := skipSpace(out, 0) + 1
			cut = [2]int{open, end}
			if next >= 0 {
				// The next member's key starts after the comma that
				// follows this value.
				i := skipSpace(out, end)
				if i < len(out) && out[i] == ',' {
					cut[1] = skipSpace(out, i+1)
				}
			}
		}
		b := make([]byte, 0, len(out)-(cut[1]-cut[0]))
		b = append(b, out[:cut[0]]...)
		b = append(b, out[cut[1]:]...)
		out, found = b, true
	}
}

// DeleteKeys is Delete of every key in keys, in one pass over obj: the
// bytes are those that deleting each key in turn leaves (every other byte
// as it was; a first member's removal takes the space after the brace),
// with one allocation when anything is removed and none when nothing is.
// On input that is not an object it returns obj unchanged and false.
func DeleteKeys(obj []byte, keys ...string) ([]byte, bool) {
	// What Delete in turn leaves: the brace and the space after it when
	// the first member stays, the brace alone when it goes; each member
	// kept after the first kept, with the bytes from the end of the value
	// before it (kept or not) to the end of its own; and the bytes after
	// the last value.
	type span struct{ from, to int }
	var kept [16]span
	spans := kept[:0]
	prevEnd, lastEnd, keyStart := -1, -1, 0
	removed, firstGone := false, false
	err := Members(obj, func(m Member) bool {
		drop := false
		for _, k := range keys {
			if m.Key == k {
				drop = true
				break
			}
		}
		switch {
		case drop:
			removed = true
			if prevEnd < 0 && len(spans) == 0 {
				firstGone = true
			}
		case len(spans) == 0:
			// The first kept member, from its key.
			keyStart = memberKeyStart(obj, prevEnd, m.Start)
			spans = append(spans, span{keyStart, m.End})
		default:
			spans = append(spans, span{prevEnd, m.End})
		}
		prevEnd, lastEnd = m.End, m.End
		return true
	})
	if err != nil || !removed {
		return obj, false
	}
	open := skipSpace(obj, 0) + 1
	n := open + len(obj) - lastEnd
	for _, s := range spans {
		n += s.to - s.from
	}
	out := make([]byte, 0, n)
	if len(spans) > 0 && !firstGone {
		out = append(out, obj[:spans[0].from]...)
	} else {
		out = append(out, obj[:open]...)
	}
	for _, s := range spans {
		out = append(out, obj[s.from:s.to]...)
	}
	return append(out, obj[lastEnd:]...), true
}

// memberKeyStart is where the key of the member whose value starts at
// valueStart begins: after the comma that ends the value ending at
// prevEnd, or after the brace for the first member.
func memberKeyStart(obj []byte, prevEnd, valueStart int) int {
	i := skipSpace(obj, 0) + 1
	if prevEnd >= 0 {
		i = skipSpace(obj, prevEnd)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	i = skipSpace(obj, i)
	if i > valueStart {
		return valueStart
	}
	return i
}
