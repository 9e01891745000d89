package proxy

import (
	"sync/atomic"
	"testing"

	"github.com/mcp-gate/mcp-gate/upstream/upstreamtest"
)

// Options.Settled runs once, when the first relayed request has its
// answer: not at initialize or a list, not for a call the policy refused
// (nothing was relayed), and not again after the first answer.
func TestSettledAfterTheFirstRelayedAnswer(t *testing.T) {
	a := &recorder{}
	var settled atomic.Int32
	pol := static(t, "version: 1\nfallback: deny\ndeny: [mcp:alpha:rm]\nallow: [mcp:alpha:echo]\n")
	f := start(t, map[string]upstreamtest.ServeFunc{"alpha": a.server("echo", "rm")}, pol, nil,
		func(o *Options) { o.Settled = func() { settled.Add(1) } })
	if _, err := f.sess.ListTools(ctx10(t), nil); err != nil {
		t.Fatal(err)
	}
	if r, _ := callText(t, f.sess, "alpha__rm", "x"); !r.IsError {
		t.Fatal("rm was not denied")
	}
	if n := settled.Load(); n != 0 {
		t.Fatalf("settled %d times before any request was relayed; want 0", n)
	}
	for range 3 {
		if r, _ := callText(t, f.sess, "alpha__echo", "x"); r.IsError {
			t.Fatalf("echo: %q", resultText(r))
		}
		if n := settled.Load(); n != 1 {
			t.Fatalf("settled %d times after relayed calls; want once, at the first answer", n)
		}
	}
}
