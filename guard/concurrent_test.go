package guard

import (
	"reflect"
	"sync"
	"testing"
)

// TestConcurrentUse runs the four entry points from many goroutines on the
// same inputs; under -race it proves they share no mutable state, and the
// results must match a sequential run.
func TestConcurrentUse(t *testing.T) {
	pos := readCorpus(t, "testdata/corpus/positive")
	neg := readCorpus(t, "testdata/corpus/negative")
	var inputs [][]byte
	for _, f := range append(pos, neg...) {
		inputs = append(inputs, textResult(string(f.data)))
	}
	want := make([][]Finding, len(inputs))
	for i, in := range inputs {
		want[i] = InspectResult(in)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range inputs {
				in := inputs[(i+g)%len(inputs)]
				if got := InspectResult(in); !reflect.DeepEqual(got, want[(i+g)%len(inputs)]) {
					errs <- "InspectResult differs under concurrency"
					return
				}
				InspectElicitation(in)
				Neutralize(string(in))
				if _, _, err := NeutralizeJSON(in); err != nil {
					errs <- err.Error()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
