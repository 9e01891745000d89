package rpc

import (
	"bytes"
	"io"
)

// A large message is read straight into the room made for its line rather
// than through the Stream's bufio.Reader: the bytes then cross from the
// kernel into memory once, in reads as large as the pipe holds, instead of
// in 64 KB pieces that are copied a second time into the line. A read that
// runs past the line's end brings the start of the next message(s) with
// it; those bytes are put back in front of the bufio.Reader's source (a
// prefixReader), so the next read, direct or buffered, begins with them.

// directReadMin is the least a full line buffer grows by.
const directReadMin = 64 << 10

// What a direct read takes past its line's end is the next message's and
// cannot stay in the line's room, which goes out with the line. It used to
// be copied into memory of its own for every large line: up to the quarter
// more room the line pool may hand out (linepool.go), 100 KB a 1 MB result
// on average, in objects large enough to take whole pages each. That was
// nearly all the garbage a run of 1 MB results made once their rooms were
// reused: it set the collector's pace during the run, and its page runs,
// scattered among what earlier small traffic left in the heap, kept the
// heap from placing the next rooms of 1 MB in freed space (e2e/bench, peak
// RSS under 1 MB results at 8 in flight after echo load: 24.4-25.8 MB ->
// 24.0-24.5 MB). So a direct read reads no further than the line is
// expected to reach (the last large line's length with its slack,
// lineHint), which leaves a few KB past the end, and those bytes go into
// room the prefixReader keeps (spare) and reuses once they have been read.

// overreadKeep bounds the spare room a Stream keeps for the bytes read past
// a line's end: the size of its bufio.Reader's buffer. A line much shorter
// than the one before it (its room sized for that one) can leave more
// than that: such bytes are copied into memory of their own, as before.
const overreadKeep = 64 << 10

// overreadMin is the least a direct read asks for when the line is close
// to its expected end: a read of a few bytes would be a system call for
// nothing.
const overreadMin = 4 << 10

// prefixReader is the source under a Stream's bufio.Reader: the bytes a
// direct read took past its line's end, then the byte stream itself. It is
// the reader's alone (see readLine).
type prefixReader struct {
	pending []byte
	// spare is the room pending points into when putBack could reuse it;
	// nothing else refers to it (Read copies out of pending).
	spare []byte
	r     io.Reader
}

// putBack puts b, bytes read past a line's end, in front of what is still
// pending. b is copied: it is in the line's room.
func (p *prefixReader) putBack(b []byte) {
	if len(p.pending) == 0 && len(b) <= overreadKeep {
		// Nothing is pending, so nothing still to be read is in spare.
		p.spare = append(p.spare[:0], b...)
		p.pending = p.spare
		return
	}
	p.pending = append(bytes.Clone(b), p.pending...)
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		if len(p.pending) == 0 {
			p.pending = nil
		}
		return n, nil
	}
	return p.r.Read(b)
}

// readInto reads the rest of the line being gathered in st.buf straight
// into its free room (into pieces when there is none: readPieces), when
// the bufio.Reader holds nothing; ok false means it did not (the caller
// goes on with ReadSlice).
// It returns what readLine's loop needs of one fragment: whether the
// line's newline was read (the bytes after it are given back to the
// prefixReader), and the read's error, if any, with the bytes read before
// it already appended.
func (s *Stream) readInto(st *lineState) (ok, whole bool, err error) {
	if st.buf == nil || st.tooBig > 0 || s.r.Buffered() > 0 {
		return false, false, nil
	}
	room := min(cap(st.buf), s.max+2) - len(st.buf)
	if room <= 0 {
		if len(st.buf) >= s.max+2 {
			return false, false, nil // at the limit: ReadSlice's path finds it too big
		}
		if s.budget != nil && cap(st.buf) <= s.r.Size() && s.awaitLarge() {
			// A line begun in a read that was interrupted becomes large
			// here rather than in readFragment: paced the same.
			return true, false, s.closedErr() // closed while it waited
		}
		return s.readPieces(st)
	}
	if end := s.lineHint + s.lineHint/64; end > len(st.buf) {
		// No further than the line is expected to reach: what lies past
		// its end is copied back out (putBack).
		room = min(room, max(end-len(st.buf), overreadMin))
	}
	start := len(st.buf)
	n, err := s.src.Read(st.buf[start : start+room])
	got := st.buf[start : start+n]
	if i := bytes.IndexByte(got, '\n'); i >= 0 {
		if rest := got[i+1:]; len(rest) > 0 {
			// Copied: the line is handed out with its buffer, and these
			// bytes are the next message's.
			s.src.putBack(rest)
		}
		st.buf = st.buf[:start+i+1]
		if s.watch != nil {
			s.watch.consumed(i+1, true)
		}
		return true, true, nil
	}
	st.buf = st.buf[:start+n]
	if n == 0 && err == nil {
		return false, false, nil // ReadSlice's reader retries, as it does
	}
	if s.watch != nil {
		s.watch.consumed(n, false)
	}
	return true, false, err
}

// A line longer than its room (the first large line of a Stream, which
// has no hint yet, or one longer than the last) used to grow its room by
// a quarter at a time, each time into new room with a copy: a 1 MB line
// read from room of 256 KB went through eight rooms, 4.9 MB made and
// written for it, which the collector could take back only later and the
// line pool partly kept (intermediate sizes no later line asks for). On a
// gate that has served small calls for a while, that burst came on top of
// the heap the small calls had spread over, and was most of its peak RSS
// when large results began (e2e/bench -only echo8,blob8, peak RSS 1 MB
// c=8: 24.0-24.5 MB; 20.5 with the first room sized right by hand;
// 21.3-21.5 reading in pieces). So the rest of
// such a line is read into pieces of linePiece bytes, and copied once,
// when the line is whole (or the read stops), into room of its size with
// the slack the next line of that size asks for (readFragment): about
// twice the line made, written once more.

// linePiece is the size of the pieces a line longer than its room is read
// into: the first room of a line of unknown length (readFragment).
const linePiece = 256 << 10

// maxEmptyReads is how many reads in a row that return nothing and no
// error readPieces makes before it leaves the line to the bufio.Reader
// (which makes as many more, then fails with io.ErrNoProgress).
const maxEmptyReads = 100

// readPieces reads the rest of a line that has filled its room into
// pieces, then joins them (join) into st.buf, which is the line so far
// again whatever it returns. It returns what readInto does; ok false at
// the limit (ReadSlice's path finds the line too big) or when reads return
// nothing and no error maxEmptyReads times in a row (ReadSlice's reader
// retries).
func (s *Stream) readPieces(st *lineState) (ok, whole bool, err error) {
	limit := s.max + 2
	total := len(st.buf)
	var full [][]byte // the pieces filled, in order
	var cur []byte
	empty := 0 // reads in a row that returned nothing and no error
	for total < limit {
		if len(cur) == cap(cur) {
			if cur != nil {
				full = append(full, cur)
			}
			cur = make([]byte, 0, min(linePiece, limit-total))
		}
		start := len(cur)
		n, rerr := s.src.Read(cur[start:cap(cur)])
		got := cur[start : start+n]
		if i := bytes.IndexByte(got, '\n'); i >= 0 {
			if rest := got[i+1:]; len(rest) > 0 {
				s.src.putBack(rest)
			}
			cur = cur[:start+i+1]
			s.join(st, full, cur, total+i+1)
			if s.watch != nil {
				s.watch.consumed(i+1, true)
			}
			return true, true, nil
		}
		cur = cur[:start+n]
		total += n
		if n == 0 && rerr == nil {
			// Retried here, as the bufio.Reader retries: a join at
			// every empty read would copy the whole line so far each
			// time, a cost that grows with the square of its length.
			if empty++; empty < maxEmptyReads {
				continue
			}
			s.join(st, full, cur, total)
			return false, false, nil
		}
		empty = 0
		if s.watch != nil {
			s.watch.consumed(n, false)
		}
		if rerr != nil {
			// Interrupted, or the end: st.buf keeps what was read.
			s.join(st, full, cur, total)
			return true, false, rerr
		}
	}
	// At the limit, and no newline: the line is over it. Joined, its room
	// would be made and filled only to be let go at once (readFragment
	// keeps only its head and tail): a line over the limit would cost
	// twice the limit. So the head and tail are taken from the pieces,
	// and readFragment skips the rest of the line from there.
	s.overPieces(st, full, cur, total)
	return false, false, nil
}

// overPieces makes st a line over the limit (what readFragment makes of
// one): its head and its tail so far, and total, its length so far, from
// st.buf, full's pieces and cur. The old room was the reader's alone.
func (s *Stream) overPieces(st *lineState, full [][]byte, cur []byte, total int) {
	parts := append(append([][]byte{st.buf}, full...), cur)
	head := make([]byte, 0, salvageWindow)
	var tail []byte
	for _, p := range parts {
		head = append(head, p[:min(len(p), salvageWindow-len(head))]...)
		tail = keepTail(tail, p)
	}
	s.recycleOwn(st.buf)
	*st = lineState{buf: head, tail: tail, tooBig: total}
}

// join makes st.buf the line so far: st.buf, then full's pieces, then cur
// (total bytes), in room of its own as large as the next line of this
// size will ask for (readFragment's lineHint slack), but never past the
// limit. The pieces and the old room were the reader's alone.
func (s *Stream) join(st *lineState, full [][]byte, cur []byte, total int) {
	line := linePool.get(min(total+total/64, s.max+2))
	line = append(line, st.buf...)
	for _, p := range full {
		line = append(line, p...)
	}
	line = append(line, cur...)
	s.recycleOwn(st.buf)
	st.buf = line
}
