package hostconfig

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the line-by-line comparison (lines × lines) of the
// part of two files that differs; past it the diff shows the whole changed
// region as removed then added, which is still correct, just less helpful.
const maxDiffCells = 4 << 20

// Diff is a readable unified-style diff of one file's change, with three
// lines of context.
func Diff(path string, before, after []byte) string {
	a, b := splitLines(before), splitLines(after)
	var out strings.Builder
	switch {
	case before == nil:
		fmt.Fprintf(&out, "--- %s (does not exist)\n+++ %s (new)\n", path, path)
	case after == nil:
		fmt.Fprintf(&out, "--- %s\n+++ %s (removed)\n", path, path)
	default:
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", path, path)
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := lineOps(a[pre:len(a)-suf], b[pre:len(b)-suf])
	// Context: three lines either side of each change.
	type line struct {
		op   byte
		text string
	}
	var all []line
	for _, l := range a[:pre] {
		all = append(all, line{' ', l})
	}
	all = append(all, func() []line {
		var ls []line
		for _, o := range ops {
			ls = append(ls, line{o.op, o.text})
		}
		return ls
	}()...)
	for _, l := range a[len(a)-suf:] {
		all = append(all, line{' ', l})
	}
	show := make([]bool, len(all))
	for i, l := range all {
		if l.op != ' ' {
			for j := max(0, i-3); j <= min(len(all)-1, i+3); j++ {
				show[j] = true
			}
		}
	}
	gap := false
	for i, l := range all {
		if !show[i] {
			gap = true
			continue
		}
		if gap {
			out.WriteString("@@\n")
			gap = false
		}
		out.WriteByte(l.op)
		out.WriteString(l.text)
		out.WriteByte('\n')
	}
	return out.String()
}

type lineOp struct {
	op   byte
	text string
}

// lineOps is an LCS diff of two short line slices.
func lineOps(a, b []string) []lineOp {
	var ops []lineOp
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			ops = append(ops, lineOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, lineOp{'+', l})
		}
		return ops
	}
	// lcs[i][j]: length of the LCS of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i]})
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			// Removals before additions, as diff(1) shows them.
			ops = append(ops, lineOp{'-', a[i]})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j]})
			j++
		}
	}
	return ops
}

func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}
