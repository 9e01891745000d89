package proxy

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-gate/mcp-gate/naming"
)

// A published catalog snapshot never changes: a request that resolved a
// name in it keeps reading the same view while the upstream's list
// changes and a new snapshot replaces it. Run with -race, concurrent
// listing and re-listing also proves readers need no lock.
func TestCatalogSnapshotIsImmutable(t *testing.T) {
	var version atomic.Int32
	up := func(method string, id, params json.RawMessage, w func(string)) {
		switch method {
		case "tools/list":
			v := version.Load()
			reply(w, id, fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}]}`, v))
		case "tools/call":
			w(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			reply(w, id, `{"content":[]}`)
		}
	}
	h := startRawHost(t, map[string]scripted{"s": up})
	g := h.gate
	h.call("tools/list", `{}`)
	first := onlyCatalog(t, g)
	if _, ok := first.tools.table.Lookup("s__t0"); !ok {
		t.Fatal("s__t0 not in the first snapshot")
	}
	firstTable, firstList := first.tools.table, first.tools.servers["s"]

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap := onlyCatalog(t, g)
			// One view: every listed entry has its wire name in the same
			// snapshot's table.
			for server, l := range snap.tools.servers {
				for _, e := range l.entries {
					if _, ok := snap.tools.table.Wire(naming.Key{Server: server, Name: e.name}); !ok {
						t.Errorf("snapshot lists %s:%s without a wire name", server, e.name)
						return
					}
				}
			}
		}
	}()
	for i := 1; i <= 5; i++ {
		version.Store(int32(i))
		h.call("tools/call", fmt.Sprintf(`{"name":"s__t%d","arguments":{}}`, i-1))
		want := fmt.Sprintf("s__t%d", i)
		waitFor(t, want+" in the catalog", func() bool {
			_, ok := onlyCatalog(t, g).tools.table.Lookup(want)
			return ok
		})
	}
	close(stop)
	wg.Wait()
	if first.tools.table != firstTable || first.tools.servers["s"] != firstList || len(firstList.entries) != 1 || firstList.entries[0].name != "t0" {
		t.Fatal("the first snapshot was changed after it was published")
	}
	if _, ok := first.tools.table.Lookup("s__t5"); ok {
		t.Fatal("a later tool appeared in the first snapshot")
	}
}

// onlyCatalog is the catalog of the one pool key a gate's sessions have.
func onlyCatalog(t *testing.T, g *Gate) *snapshot {
	t.Helper()
	g.mu.Lock()
	var keys []string
	for k := range g.cats {
		keys = append(keys, k)
	}
	g.mu.Unlock()
	if len(keys) != 1 {
		t.Fatalf("%d catalogs; want one", len(keys))
	}
	return g.catalogOf(keys[0])
}
