package rpc

// Framing helpers for transports outside this package (an HTTP upstream
// carries one message per request body or per SSE event, not per line):
// the same encoding, decoding and MessageError rules as Stream's.

// EncodeMessage returns m's wire form: one JSON object, no line end.
func EncodeMessage(m *Message) ([]byte, error) { return encodeMessage(m) }

// DecodeMessage parses one whole message as Stream's Read does: a message
// that cannot be used is a *MessageError for it alone, with whatever id
// could be salvaged. The returned message aliases raw.
func DecodeMessage(raw []byte) (*Message, *MessageError) {
	m, err := Decode(raw)
	if err != nil {
		return nil, messageError(err, raw)
	}
	return m, nil
}

// OversizedMessage describes a message of size bytes, larger than limit,
// from its head and tail (the ends a transport kept of it, from which an id
// may be salvaged).
func OversizedMessage(size, limit int, head, tail []byte) *MessageError {
	return oversized(size, limit, head, tail)
}
