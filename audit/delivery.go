package audit

import "log/slog"

// EventUndelivered marks an answer the gate had for its host and dropped
// because the host was not reading (its outgoing queue stayed full) or
// because it was larger than a message to the host may be
// (--max-message-bytes): the host got a short error in its place.
const EventUndelivered = "undelivered"

// Undelivered is a result dropped for a host that was not reading, or too
// large to send it.
type Undelivered struct {
	Session  string
	Method   string // the host's request: tools/call, resources/read, ...
	WireName string // the tool or prompt name as the host wrote it, if any
	Bytes    int    // the size of the dropped result
	Reason   string
}

// Undelivered records a dropped result.
func (a *Logger) Undelivered(u Undelivered) {
	r := a.begin(slog.LevelWarn, "undelivered", EventUndelivered)
	if r == nil {
		return
	}
	r.str(KeySession, u.Session)
	r.str("method", u.Method)
	r.str(KeyWireName, u.WireName)
	r.int(KeyCount, int64(u.Bytes))
	r.str(KeyReason, Redact(u.Reason))
	a.end(r)
}
