package guard

import "testing"

// TestPrefilterProbeChains guards against a hash that clusters the exact
// table: the longest probe chain must stay short.
func TestPrefilterProbeChains(t *testing.T) {
	longest, used := 0, 0
	for i := range pf().keys {
		if pf().keys[i] == 0 {
			continue
		}
		used++
		n := 0
		for h := pf().slot(pf().keys[i]); h != uint32(i); h = (h + 1) & pf().mask {
			n++
		}
		longest = max(longest, n)
	}
	t.Logf("exact table: %d slots, %d used, %d candidates, longest displacement %d", len(pf().keys), used, len(pf().cands), longest)
	if longest > 16 {
		t.Errorf("longest probe displacement %d, want <= 16", longest)
	}
}
