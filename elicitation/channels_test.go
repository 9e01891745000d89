package elicitation

import (
	"context"
	"strings"
	"testing"
	"time"
)

type fixed struct {
	name  string
	asked *[]string
}

func (f fixed) Approve(context.Context, Request, time.Duration) Answer {
	*f.asked = append(*f.asked, f.name)
	return Answer{Outcome: Approved}
}

// Each question goes to the first channel of its list that can ask, and to
// that one only; none that can ask is a refusal that says why.
func TestChannelsPickTheFirstThatCanAsk(t *testing.T) {
	for _, c := range []struct {
		via     []string
		hostCan bool
		local   bool
		want    string // the channel asked, or "" for Unsupported
		says    string
	}{
		{nil, true, true, "host", ""},
		{nil, false, true, "", "cannot ask for approval"},
		{[]string{"elicitation", "local"}, true, true, "host", ""},
		{[]string{"elicitation", "local"}, false, true, "local", ""},
		{[]string{"elicitation", "local"}, false, false, "", "no local approval surface"},
		{[]string{"local", "elicitation"}, true, true, "local", ""},
		{[]string{"local"}, true, false, "", "no local approval surface"},
		{[]string{"elicitation"}, false, true, "", "cannot ask for approval"},
	} {
		var asked []string
		ch := Channels{Host: fixed{"host", &asked}, HostCanAsk: func() bool { return c.hostCan }}
		if c.local {
			ch.Local = fixed{"local", &asked}
		}
		a := ch.Approve(context.Background(), Request{Via: c.via}, time.Second)
		switch {
		case c.want == "" && (a.Outcome != Unsupported || len(asked) != 0 || !strings.Contains(a.Detail, c.says)):
			t.Errorf("%+v: %+v, asked %v", c, a, asked)
		case c.want != "" && (len(asked) != 1 || asked[0] != c.want || !a.Allowed()):
			t.Errorf("%+v: asked %v, want %s", c, asked, c.want)
		}
	}
}
