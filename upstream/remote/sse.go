package remote

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// An event is one server-sent event (the WHATWG EventSource format that
// both MCP HTTP transports use): its type, its data, and the fields that
// steer reconnection.
type event struct {
	Type string // "message" when the event named none
	Data []byte // the data lines joined with "\n"; nil when oversized
	// TooBig is the size of the data when it exceeded the limit (then Data
	// is nil, and Head and Tail are its ends, kept to salvage an id).
	TooBig     int
	Head, Tail []byte
}

// sseReader parses a text/event-stream body. Every event is bounded: data
// larger than max costs that event alone (returned with TooBig set), and no
// line, however long, is held in memory beyond the limit.
type sseReader struct {
	br  *bufio.Reader
	max int // bound on an event's data, and on any other field's line

	// LastID is the stream's last event ID: the id field of the latest
	// event that had one (it persists across events that have none, as
	// EventSource's "last event ID buffer" does). HasID says one was seen.
	LastID string
	HasID  bool
	// Retry is the reconnection time the server asked for, 0 if none.
	Retry time.Duration

	started   bool    // the leading BOM has been dealt with
	pendingCR bool    // the last chunk ended with CR: a LF starting the next one is its pair
	ready     []event // events dispatched and not yet returned

	// The event being read.
	data      []byte
	dataSize  int // bytes of data, counted even when not kept
	dataLines int
	typ       string
	line      []byte // the current line, up to max+lineSlack
	lineSize  int    // its length, counted even when not kept
	head      []byte
	tail      []byte
}

// lineSlack is room for a field name and colon on top of the data limit.
const lineSlack = 64

// salvageBytes is how much of each end of an oversized message is kept.
const salvageBytes = 512

// maxIDBytes bounds an event id; a longer one is ignored (it would be sent
// back in every Last-Event-ID header).
const maxIDBytes = 1024

// maxRetry caps the reconnection delay a server may ask for.
const maxRetry = 30 * time.Second

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), max: max}
}

// errNoEvent is internal: a blank line that dispatched nothing.
var errNoEvent = errors.New("no event")

// Next returns the next event with data. Events without data (an id-only
// priming event, a comment) update LastID and Retry and are not returned.
// At the end of the stream it returns io.EOF (or the read error); an event
// cut off by the end is dropped, as EventSource does.
func (s *sseReader) Next() (event, error) {
	for {
		if len(s.ready) > 0 {
			ev := s.ready[0]
			s.ready[0] = event{}
			s.ready = s.ready[1:]
			return ev, nil
		}
		chunk, err := s.br.ReadSlice('\n')
		if !s.started && len(chunk) > 0 {
			s.started = true
			chunk = bytes.TrimPrefix(chunk, []byte("\xEF\xBB\xBF"))
		}
		s.consume(chunk)
		if len(s.ready) > 0 {
			continue
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return event{}, err
		}
	}
}

// consume feeds chunk (at most one buffer: one line or part of one) to the
// line machine, queueing the events it dispatches.
func (s *sseReader) consume(chunk []byte) {
	i := 0
	if s.pendingCR {
		s.pendingCR = false
		if len(chunk) > 0 && chunk[0] == '\n' {
			i = 1
		}
	}
	for i < len(chunk) {
		j := bytes.IndexAny(chunk[i:], "\r\n")
		if j < 0 {
			s.appendLine(chunk[i:])
			return
		}
		s.appendLine(chunk[i : i+j])
		end := i + j + 1
		if chunk[i+j] == '\r' {
			if end < len(chunk) {
				if chunk[end] == '\n' {
					end++
				}
			} else {
				s.pendingCR = true
			}
		}
		if ev, err := s.endLine(); err == nil {
			s.ready = append(s.ready, ev)
		}
		i = end
	}
}

func (s *sseReader) appendLine(b []byte) {
	s.lineSize += len(b)
	if room := s.max + lineSlack - len(s.line); room > 0 {
		s.line = append(s.line, b[:min(len(b), room)]...)
	}
	if s.lineSize > s.max+lineSlack && bytes.HasPrefix(s.line, []byte("data")) {
		// A data line too long to keep: keep its ends for the id.
		s.keepEnds(b)
	}
}

// keepEnds records the tail of an oversized data line.
func (s *sseReader) keepEnds(b []byte) {
	s.tail = append(s.tail, b...)
	if len(s.tail) > salvageBytes {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-salvageBytes:]...)
	}
}

// endLine interprets the current line. It returns an event when the line
// is blank and the event has data, else errNoEvent.
func (s *sseReader) endLine() (event, error) {
	line, size := s.line, s.lineSize
	s.line, s.lineSize = s.line[:0], 0
	if size == 0 {
		return s.dispatch()
	}
	if line[0] == ':' {
		return event{}, errNoEvent // a comment
	}
	field, value := line, []byte(nil)
	if k := bytes.IndexByte(line, ':'); k >= 0 {
		field, value = line[:k], line[k+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	valueSize := size - (len(line) - len(value))
	switch string(field) {
	case "data":
		if s.dataLines > 0 {
			s.dataSize++ // the "\n" joining it to the line before
		}
		s.dataLines++
		s.dataSize += valueSize
		if s.dataSize > s.max {
			if s.head == nil {
				s.head = append([]byte{}, s.data[:min(len(s.data), salvageBytes)]...)
				if len(s.head) < salvageBytes {
					s.head = append(s.head, value[:min(len(value), salvageBytes-len(s.head))]...)
				}
			}
			if valueSize == len(value) {
				s.keepEnds(value)
			}
			s.data = s.data[:0]
			return event{}, errNoEvent
		}
		if s.dataLines > 1 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
	case "event":
		if valueSize == len(value) {
			s.typ = string(value)
		}
	case "id":
		if valueSize == len(value) && len(value) <= maxIDBytes && bytes.IndexByte(value, 0) < 0 {
			s.LastID, s.HasID = string(value), true
		}
	case "retry":
		if n, err := strconv.ParseUint(string(value), 10, 63); err == nil && len(value) > 0 && value[0] >= '0' && value[0] <= '9' {
			s.Retry = min(time.Duration(min(n, uint64(maxRetry/time.Millisecond)))*time.Millisecond, maxRetry)
		}
	}
	return event{}, errNoEvent
}

// dispatch ends the event at a blank line.
func (s *sseReader) dispatch() (event, error) {
	defer func() {
		s.data, s.dataSize, s.dataLines, s.typ, s.head, s.tail = nil, 0, 0, "", nil, nil
	}()
	if s.dataLines == 0 {
		return event{}, errNoEvent
	}
	typ := s.typ
	if typ == "" {
		typ = "message"
	}
	if s.dataSize > s.max {
		return event{Type: typ, TooBig: s.dataSize, Head: s.head, Tail: s.tail}, nil
	}
	if len(s.data) == 0 {
		// An empty data field (a priming event): nothing to deliver.
		return event{}, errNoEvent
	}
	return event{Type: typ, Data: s.data}, nil
}

// reset reads on from a new body (a resumed stream), keeping the last
// event id and retry.
func (s *sseReader) reset(r io.Reader) {
	s.br.Reset(r)
	s.started = false
	s.pendingCR = false
	s.ready = nil
	s.data, s.dataSize, s.dataLines, s.typ, s.head, s.tail = nil, 0, 0, "", nil, nil
	s.line, s.lineSize = s.line[:0], 0
}
