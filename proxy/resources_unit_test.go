package proxy

// In-memory tests of the resource lists (resources.go): a refetch that
// finds the same resources tells the host nothing, as one of the same
// tools does; a changed one tells it once.

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

// relistUpstream lists the resources in res and one tool; a call to the
// tool sends the list_changed notification named in its "notify" argument.
type relistUpstream struct {
	res          atomic.Value // string: the resources array
	lists, tools atomic.Int32
}

func (u *relistUpstream) serve(method string, id, params json.RawMessage, w func(string)) {
	switch method {
	case "tools/list":
		u.tools.Add(1)
		reply(w, id, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
	case "resources/list":
		u.lists.Add(1)
		reply(w, id, `{"resources":`+u.res.Load().(string)+`}`)
	case "resources/templates/list":
		reply(w, id, `{"resourceTemplates":[{"uriTemplate":"mem://t/{x}","name":"t"}]}`)
	case "tools/call":
		if n, ok := jsonPath(params, "arguments", "notify"); ok {
			w(`{"jsonrpc":"2.0","method":"` + n + `"}`)
		}
		reply(w, id, `{"content":[]}`)
	default:
		if id != nil {
			reply(w, id, `{}`)
		}
	}
}

func TestUnchangedRelistNotifiesNobody(t *testing.T) {
	u := &relistUpstream{}
	u.res.Store(`[{"uri":"mem://a","name":"a"}]`)
	h := startRawHost(t, map[string]scripted{"s": u.serve})
	for _, m := range []string{"tools/list", "resources/list", "resources/templates/list"} {
		h.call(m, `{}`)
	}
	notify := func(n string) {
		h.call("tools/call", `{"name":"s__t","arguments":{"notify":"`+n+`"}}`)
	}
	// The server says its lists changed, and they did not.
	before, beforeTools := u.lists.Load(), u.tools.Load()
	notify("notifications/resources/list_changed")
	notify("notifications/tools/list_changed")
	waitFor(t, "the gate to list again", func() bool { return u.lists.Load() > before && u.tools.Load() > beforeTools })
	// Now the resources change: that is told, once.
	u.res.Store(`[{"uri":"mem://a","name":"a"},{"uri":"mem://b","name":"b"}]`)
	notify("notifications/resources/list_changed")
	h.next("notifications/resources/list_changed")
	// The first notification the host gets must be of the change: the list
	// it fetches on hearing it holds the new resource.
	if resp := string(h.call("resources/list", `{}`)); !strings.Contains(resp, "mem://b") {
		t.Fatalf("the host was told the resources changed while they had not; it lists %s", resp)
	}
	h.call("ping", `{}`)
	if h.has("notifications/resources/list_changed") {
		t.Fatal("the host was told of a resource list that had not changed")
	}
	if h.has("notifications/tools/list_changed") {
		t.Fatal("the host was told of a tool list that had not changed")
	}
}
