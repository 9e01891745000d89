package rpc

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestStreamLimitExact: MaxMessageBytes holds to the byte, whatever ends
// the line (LF, CR LF, or the input's end) and however it is read (the
// reader's buffer, a direct read into room of the line's size, pieces): a
// message of exactly the limit is read, one a byte or two over it is the
// *MessageError of a message over the limit, with its id salvaged, and
// the message after it is intact. (The room a line may fill is the limit
// and a CR LF; a line ended by LF alone or by the input's end used to get
// those two bytes as well; and a last line over the limit without a
// newline used to be dropped without its error.)
func TestStreamLimitExact(t *testing.T) {
	for _, limit := range []int{1000, 100 << 10, 1 << 20} {
		for _, over := range []int{0, 1, 2, 3, 4 << 10} {
			for _, end := range []string{"\n", "\r\n", ""} {
				for _, piece := range []int{7, 4 << 10, 64 << 10, 300 << 10, 4 << 20} {
					n := limit + over
					head := `{"jsonrpc":"2.0","id":1,"result":"`
					in := head + strings.Repeat("x", n-len(head)-2) + `"}`
					if end != "" {
						in += end + `{"jsonrpc":"2.0","id":2,"result":1}` + "\n"
					}
					name := fmt.Sprintf("limit %d, message of %d bytes ended by %q, reads of %d", limit, n, end, piece)
					s := NewStream(&pieceReader{b: []byte(in), piece: piece}, nopWriter{}, nil, Limits{MaxMessageBytes: limit})
					m, err := s.Read(readCtx(t))
					var me *MessageError
					switch {
					case over == 0 && err != nil:
						t.Errorf("%s: %v", name, err)
					case over == 0 && len(m.Result) != n-len(head):
						t.Errorf("%s: a result of %d bytes, want %d", name, len(m.Result), n-len(head))
					case over > 0 && (!errors.As(err, &me) || !strings.Contains(me.Reason, "exceeds the limit") || string(me.ID) != "1"):
						if m != nil {
							t.Errorf("%s: accepted, a result of %d bytes (err %v)", name, len(m.Result), err)
						} else {
							t.Errorf("%s: got %v, want the error of a message over the limit, id 1", name, err)
						}
					}
					if end != "" {
						if m, err := s.Read(readCtx(t)); err != nil || string(m.ID) != "2" {
							t.Errorf("%s: the message after it: %v, %v", name, m, err)
						}
					}
					if m, err := s.Read(readCtx(t)); !errors.Is(err, io.EOF) {
						t.Errorf("%s: at the end: %v, %v; want EOF", name, m, err)
					}
					s.Close()
				}
			}
		}
	}
}
