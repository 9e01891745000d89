package elicitation

import (
	"context"
	"strings"
	"testing"
	"time"
)

// opening is a local approver that opens off the start path: Available
// waits for it, and one that did not open is no channel.
type opening struct {
	fixed
	ready chan struct{}
	ok    bool
}

func (o opening) Available(ctx context.Context) bool {
	select {
	case <-o.ready:
		return o.ok
	case <-ctx.Done():
		return false
	}
}

// A local surface still opening is waited for, never skipped to the next
// channel; one that did not open is treated as absent, as a gate without
// one is (the next channel, or a refusal that says why).
func TestChannelsWaitForTheLocalSurface(t *testing.T) {
	var asked []string
	ready := make(chan struct{})
	ch := Channels{Host: fixed{"host", &asked}, HostCanAsk: func() bool { return true },
		Local: opening{fixed{"local", &asked}, ready, true}}
	got := make(chan Answer, 1)
	go func() {
		got <- ch.Approve(context.Background(), Request{Via: []string{"local", "elicitation"}}, time.Second)
	}()
	select {
	case a := <-got:
		t.Fatalf("answered %+v before the surface opened", a)
	case <-time.After(20 * time.Millisecond):
	}
	close(ready)
	if a := <-got; !a.Allowed() || len(asked) != 1 || asked[0] != "local" {
		t.Fatalf("after it opened: %+v, asked %v", a, asked)
	}

	closed := make(chan struct{})
	close(closed)
	for _, c := range []struct {
		via  []string
		want string
	}{
		{[]string{"local", "elicitation"}, "host"},
		{[]string{"local"}, ""},
	} {
		asked = nil
		ch.Local = opening{fixed{"local", &asked}, closed, false}
		a := ch.Approve(context.Background(), Request{Via: c.via}, time.Second)
		switch {
		case c.want == "" && (a.Outcome != Unsupported || len(asked) != 0 || !strings.Contains(a.Detail, "no local approval surface")):
			t.Errorf("%v, surface did not open: %+v, asked %v", c.via, a, asked)
		case c.want != "" && (len(asked) != 1 || asked[0] != c.want):
			t.Errorf("%v, surface did not open: asked %v, want %s", c.via, asked, c.want)
		}
	}
}
