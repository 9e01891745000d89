package naming

import (
	"fmt"
	"strings"
	"testing"
)

// benchKeys is a catalog shaped like real ones: mostly plain names, one in
// ten with a character to sanitise, one in twenty over budget.
func benchKeys(n int) []Key {
	keys := make([]Key, 0, n)
	for i := range n {
		server := fmt.Sprintf("server-%d", i%20)
		tool := fmt.Sprintf("tool_number_%d", i)
		switch {
		case i%20 == 0:
			tool = strings.Repeat("very_long_tool_name_", 3) + tool
		case i%10 == 0:
			tool = fmt.Sprintf("tool.number.%d", i)
		}
		keys = append(keys, Key{server, tool})
	}
	return keys
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			keys := benchKeys(n)
			tab := Build(53, keys)
			wires := make([]string, len(keys))
			for i, k := range keys {
				wires[i], _ = tab.Wire(k)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := tab.Lookup(wires[i]); !ok {
					b.Fatal("missing name")
				}
				i++
				if i == len(wires) {
					i = 0
				}
			}
		})
	}
}

func BenchmarkWire(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			keys := benchKeys(n)
			tab := Build(53, keys)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := tab.Wire(keys[i]); !ok {
					b.Fatal("missing key")
				}
				i++
				if i == len(keys) {
					i = 0
				}
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			keys := benchKeys(n)
			b.ReportAllocs()
			for b.Loop() {
				Build(53, keys)
			}
		})
	}
}
