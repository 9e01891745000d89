package audit

import (
	"sync/atomic"
	"time"
)

// A record's time is written as slog's JSON handler writes it
// (time.RFC3339Nano), one per call the gate relays. Within one second
// only the fraction changes: the date, the time of day and the zone are
// formatted once per second and kept.

// stampSecond is the formatted part of one second's timestamps.
type stampSecond struct {
	unix   int64
	loc    *time.Location
	prefix []byte // "2006-01-02T15:04:05"
	zone   []byte // "Z07:00"
}

var lastSecond atomic.Pointer[stampSecond]

// appendTime appends t as t.AppendFormat(b, time.RFC3339Nano) does.
func appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	s := lastSecond.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		// One second has one zone offset: a change of offset falls on a
		// second's boundary.
		s = &stampSecond{unix: t.Unix(), loc: t.Location(),
			prefix: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		lastSecond.Store(s)
	}
	b = append(b, s.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		// ".999999999": the fraction without its trailing zeros.
		var f [10]byte
		f[0] = '.'
		for i := 9; i >= 1; i-- {
			f[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(f)
		for f[n-1] == '0' {
			n--
		}
		b = append(b, f[:n]...)
	}
	return append(b, s.zone...)
}
