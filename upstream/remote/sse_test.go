package remote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func readAll(t testing.TB, r io.Reader, max int) ([]event, *sseReader) {
	t.Helper()
	s := newSSEReader(r, max)
	var out []event
	for {
		ev, err := s.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next: %v", err)
			}
			return out, s
		}
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}
}

func TestSSEParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // type:data
		lastID   string
		retry    time.Duration
	}{
		{"one", "data: {}\n\n", []string{"message:{}"}, "", 0},
		{"typed", "event: endpoint\ndata: /m?s=1\n\n", []string{"endpoint:/m?s=1"}, "", 0},
		{"multiline", "data: a\ndata: b\n\n", []string{"message:a\nb"}, "", 0},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"message:x", "message:y"}, "", 0},
		{"cr only", "data: x\r\rdata: y\r\r", []string{"message:x", "message:y"}, "", 0},
		{"no space", "data:x\n\n", []string{"message:x"}, "", 0},
		{"two spaces", "data:  x\n\n", []string{"message: x"}, "", 0},
		{"comment", ": ping\n\ndata: x\n\n", []string{"message:x"}, "", 0},
		{"priming", "id: 7\ndata: \n\nid: 8\ndata: {}\n\n", []string{"message:{}"}, "8", 0},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []string{"message:a", "message:b"}, "7", 0},
		{"id with NUL ignored", "id: 7\n\nid: a\x00b\ndata: x\n\n", []string{"message:x"}, "7", 0},
		{"retry", "retry: 1500\ndata: x\n\n", []string{"message:x"}, "", 1500 * time.Millisecond},
		{"retry bad", "retry: 15x\ndata: x\n\n", []string{"message:x"}, "", 0},
		{"retry capped", "retry: 999999999999\ndata: x\n\n", []string{"message:x"}, "", maxRetry},
		{"unterminated dropped", "data: x\n\ndata: y\n", []string{"message:x"}, "", 0},
		{"bom", "\xEF\xBB\xBFdata: x\n\n", []string{"message:x"}, "", 0},
		{"field without colon", "data\n\ndata: x\n\n", []string{"message:x"}, "", 0},
		{"unknown field", "foo: bar\ndata: x\n\n", []string{"message:x"}, "", 0},
		{"event reset", "event: a\ndata: x\n\ndata: y\n\n", []string{"a:x", "message:y"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, and one byte at a time (every line end split).
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				evs, s := readAll(t, r, 1<<20)
				var got []string
				for _, ev := range evs {
					got = append(got, ev.Type+":"+string(ev.Data))
				}
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Errorf("events %q, want %q", got, tc.want)
				}
				if s.LastID != tc.lastID || s.Retry != tc.retry {
					t.Errorf("last id %q retry %s, want %q %s", s.LastID, s.Retry, tc.lastID, tc.retry)
				}
			}
		})
	}
}

// An event larger than the limit costs that event alone, is reported with
// its size and ends (for the id), and the stream goes on.
func TestSSEOversizedEvent(t *testing.T) {
	const max = 1000
	big := `{"jsonrpc":"2.0","id":42,"result":{"x":"` + strings.Repeat("a", 5000) + `"}}`
	for name, in := range map[string]string{
		"one line":   "data: " + big + "\n\ndata: {}\n\n",
		"many lines": "data: " + big[:600] + "\ndata: " + big[600:] + "\n\ndata: {}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			evs, _ := readAll(t, iotest.HalfReader(strings.NewReader(in)), max)
			if len(evs) != 2 {
				t.Fatalf("%d events, want 2", len(evs))
			}
			if evs[0].TooBig < len(big) || evs[0].Data != nil {
				t.Errorf("first event: TooBig %d, %d data bytes; want it reported as oversized", evs[0].TooBig, len(evs[0].Data))
			}
			if !bytes.Contains(evs[0].Head, []byte(`"id":42`)) {
				t.Errorf("head %q lost the id", evs[0].Head)
			}
			if string(evs[1].Data) != "{}" {
				t.Errorf("the next event is %q", evs[1].Data)
			}
		})
	}
}

// A line with no end, however long, is never held past the limit.
func TestSSEEndlessLineBounded(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: "), io.LimitReader(repeatReader('a'), 50<<20))
	s := newSSEReader(r, 1<<20)
	_, err := s.Next()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Next: %v, want EOF", err)
	}
	if cap(s.line) > 2<<20 { // append may round up; never the 50 MB of the line
		t.Errorf("line buffer grew to %d bytes", cap(s.line))
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n", "id: 1\nretry: 10\ndata: \n\n", "event: endpoint\ndata: /x\r\n\r\n",
		"data: a\rdata: b\r\r", ": c\n\n", "\xEF\xBB\xBFdata:x\n\n", "data: " + strings.Repeat("x", 300) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		whole, s1 := readAll(t, bytes.NewReader(in), max)
		split, s2 := readAll(t, iotest.OneByteReader(bytes.NewReader(in)), max)
		if len(whole) != len(split) || s1.LastID != s2.LastID || s1.Retry != s2.Retry {
			t.Fatalf("whole and byte-wise reads differ: %d/%d events, ids %q/%q", len(whole), len(split), s1.LastID, s2.LastID)
		}
		for i := range whole {
			a, b := whole[i], split[i]
			if a.Type != b.Type || !bytes.Equal(a.Data, b.Data) || a.TooBig != b.TooBig {
				t.Fatalf("event %d differs", i)
			}
			if len(a.Data) > max || (a.TooBig > 0 && a.TooBig <= max) {
				t.Fatalf("event %d: %d data bytes, TooBig %d, limit %d", i, len(a.Data), a.TooBig, max)
			}
			if a.TooBig == 0 && len(a.Data) == 0 {
				t.Fatalf("event %d: empty data returned", i)
			}
		}
	})
}

func BenchmarkSSE(b *testing.B) {
	var in bytes.Buffer
	msg := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1000) + `"}]}}`
	for i := range 1000 {
		fmt.Fprintf(&in, "id: %d\ndata: %s\n\n", i, msg)
	}
	b.SetBytes(int64(in.Len()))
	for b.Loop() {
		s := newSSEReader(bytes.NewReader(in.Bytes()), 1<<20)
		for {
			if _, err := s.Next(); err != nil {
				break
			}
		}
	}
}
