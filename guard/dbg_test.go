package guard

import (
	"os"
	"testing"
)

func TestDbgDialog(t *testing.T) {
	name := os.Getenv("DBG")
	for _, e := range readDialogs(t, os.Getenv("DBGFILE")) {
		if name != "" && e.name != name {
			continue
		}
		var d dialogScratch
		sc, q := d.judge([]byte(e.text))
		t.Logf("%s: score %d quote %q", e.name, sc, q)
		for _, it := range d.items {
			t.Logf("   %+v %q", it, d.low[it.a:it.b])
		}
	}
}
