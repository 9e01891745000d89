package audit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// record is one audit record being built: JSON bytes on the fast path (a
// Logger made by New), or slog attributes for a Logger over a handler.
type record struct {
	buf   []byte
	attrs []slog.Attr
	fast  bool
	level slog.Level
	msg   string
}

var records = sync.Pool{New: func() any { return &record{buf: make([]byte, 0, 512)} }}

// begin starts a record, or returns nil when the logger would drop it.
func (a *Logger) begin(level slog.Level, msg, event string) *record {
	r := records.Get().(*record)
	r.level, r.msg = level, msg
	if a.w != nil {
		// What slog's JSON handler writes first: time, level and message.
		r.fast = true
		b := append(r.buf[:0], `{"time":"`...)
		b = appendTime(b, time.Now())
		b = append(b, `","level":"`...)
		b = append(b, level.String()...)
		b = append(b, `","msg":`...)
		b = appendJSONString(b, msg)
		r.buf = b
	} else {
		if !a.l.Enabled(context.Background(), level) {
			records.Put(r)
			return nil
		}
		r.fast = false
		r.attrs = r.attrs[:0]
	}
	r.str(KeyEvent, event)
	return r
}

func (r *record) str(key, val string) {
	val = bounded(val)
	if !r.fast {
		r.attrs = append(r.attrs, slog.String(key, val))
		return
	}
	r.buf = appendKey(r.buf, key)
	r.buf = appendJSONString(r.buf, val)
}

// maxValueBytes bounds one string value of a record. A value can come
// from a request (a resource URI the model wrote, up to the 32 MB a
// message may have) or an upstream; a record as long as the message would
// be dropped or split by the log shippers that read the audit (many skip
// or cut lines past 16 to 100 KB), so that a call could run with its
// record never reaching the security team. A longer value keeps its head,
// cut on a character, and says how long it was and its digest, which
// matches the whole value within a run.
const maxValueBytes = 2048

// bounded returns s, or its head and description when it is longer than
// maxValueBytes.
func bounded(s string) string {
	if len(s) <= maxValueBytes {
		return s
	}
	cut := maxValueBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… [" + strconv.Itoa(len(s)) + " bytes in all, " + Digest([]byte(s)) + "]"
}

// appendKey appends a member's separator and key. The keys are this
// package's constants, plain ASCII that needs no escaping.
func appendKey(b []byte, key string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func (r *record) int(key string, val int64) {
	if !r.fast {
		r.attrs = append(r.attrs, slog.Int64(key, val))
		return
	}
	r.buf = appendKey(r.buf, key)
	r.buf = strconv.AppendInt(r.buf, val, 10)
}

// end writes the record, in one write, and recycles it. It returns the
// write's error: the fast path's writer's, or the handler's (slog.Logger
// would drop it, so the record goes to the handler directly, with no
// caller PC: a handler with AddSource shows no source for these records).
func (a *Logger) end(r *record) error {
	var err error
	if r.fast {
		r.buf = append(r.buf, "}\n"...)
		err = a.w.record(r.buf)
	} else {
		rec := slog.NewRecord(time.Now(), r.level, r.msg, 0)
		rec.AddAttrs(r.attrs...)
		err = a.l.Handler().Handle(context.Background(), rec)
		clear(r.attrs) // let the strings go
	}
	if cap(r.buf) <= 16<<10 {
		records.Put(r)
	}
	return err
}

// appendJSONString appends s as a quoted JSON string, escaped exactly as
// log/slog's JSON handler escapes it (so that the lines are the same bytes
// whichever path wrote them): '"', '\\' and control characters escaped,
// \n \r \t by name, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped,
// '<', '>' and '&' left alone.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"
