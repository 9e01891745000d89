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
