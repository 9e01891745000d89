package rpc

import (
	"context"
	"sync"
)

// In direct mode (stream.go) a message is written on its writer's
// goroutine, and almost always whole: its encoded line is needed only for
// the length of the Write. So it is encoded into a pooled buffer instead
// of a new one per message (two per relayed call: the forwarded request
// and the host's answer). A line is never read from the pool by another
// message while it is still the wire's: Write puts it back only when it
// returns, and everything that outlives the Write (what a peer with no
// room left unwritten, queued for the writer goroutine; a batch, which
// gathers copies) is copied out first (writeDirect, writeOutgoing,
// writeBatched). A large payload is never in the buffer: it is sent from
// the message's own bytes (encodeLine), and only its head is.
//
// Received lines are pooled apart (linepool.go): a message aliases its
// line for as long as anything refers to it (largeread.go), so a large
// line goes back only once the host's Stream has written whole the
// response that relays it (outgoing.line), and only when its handler said
// it keeps nothing of it (ReleaseAfterWrite).

// pooledLineMax is the largest buffer kept: a pooled line holds a small
// message or a large one's head, and a rare larger one is not worth
// keeping the memory of.
const pooledLineMax = batchSmall

var lineBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

// writePooled encodes m into a pooled buffer and writes it in direct mode.
func (s *Stream) writePooled(ctx context.Context, m *Message) error {
	bp := lineBufs.Get().(*[]byte)
	o, err := s.encodeLine((*bp)[:0], m)
	if err != nil {
		if o.msg != nil && cap(o.msg) <= pooledLineMax {
			*bp = o.msg[:0] // as the encoder grew it
		}
		lineBufs.Put(bp)
		return err
	}
	err = s.writeOutgoing(ctx, o)
	if cap(o.msg) <= pooledLineMax {
		// The bytes o.msg has, as the pool kept them or the encoder grew
		// them; never a slice a queue holds (those are copies).
		*bp = o.msg[:0]
		lineBufs.Put(bp)
	}
	return err
}

// encodeLineInto is encodeLine appending to buf; a nil buf gets one of
// the message's size (encodeMessage), a large payload none (its head only).
func encodeLineInto(buf []byte, m *Message) (outgoing, error) {
	if head, body, ok := appendLargeHead(buf, m, largePayload); ok {
		o := outgoing{msg: head, body: body, tail: lineTail}
		if m.reuse.holds(body) {
			o.line = m.reuse
		}
		return o, nil
	}
	var b []byte
	var err error
	if buf == nil {
		b, err = encodeMessage(m)
	} else {
		b, err = appendMessage(buf, m)
	}
	if err != nil {
		return outgoing{}, err
	}
	return outgoing{msg: append(b, '\n')}, nil
}
