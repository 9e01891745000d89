package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a file, at a position in it.
type Problem struct {
	File string
	Line int // 1-based; 0 when the problem concerns the whole file
	Col  int // 1-based; 0 when unknown
	Msg  string
}

// Pos returns "file:line:col", or less when the line or column is unknown.
func (p Problem) Pos() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// String returns "file:line:col: message".
func (p Problem) String() string { return p.Pos() + ": " + p.Msg }

// ParseError is the error of [Parse] and [ParseCases]: every problem of the
// file, in the order of the file, not only the first.
type ParseError struct {
	Problems []Problem
}

// Error lists every problem, one a line.
func (e *ParseError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Warning is something in a valid policy that is probably not what its
// author meant, such as a rule naming a server this machine does not have.
type Warning struct {
	Pos string // "file:line:col"
	Msg string
}

// String returns "file:line:col: message".
func (w Warning) String() string { return w.Pos + ": " + w.Msg }

// maxProblems bounds the problems one file reports: past it, the rest of
// the list would only repeat the same mistake, and a fuzzer's input could
// otherwise make the error text quadratic.
const maxProblems = 100

// problems collects the problems and warnings of one file, mapping the
// positions of a YAML document to positions in the file that holds it (an
// inline policy sits indented inside a case file).
type problems struct {
	file     string
	lineOff  int // added to every line
	colOff   int // added to every column
	errs     []Problem
	warns    []Problem
	warnings []Warning // warns in the file's order, set by err
	dropped  int
}

func (ps *problems) pos(line, col int) (int, int) {
	if line == 0 {
		return 0, 0
	}
	if col == 0 {
		return line + ps.lineOff, 0
	}
	return line + ps.lineOff, col + ps.colOff
}

func (ps *problems) errorf(line, col int, format string, args ...any) {
	if len(ps.errs) >= maxProblems {
		ps.dropped++
		return
	}
	l, c := ps.pos(line, col)
	ps.errs = append(ps.errs, Problem{File: ps.file, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)})
}

func (ps *problems) warnf(line, col int, format string, args ...any) {
	l, c := ps.pos(line, col)
	ps.warns = append(ps.warns, Problem{File: ps.file, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)})
}

func inFileOrder(a, b Problem) int {
	return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
}

// err returns the collected problems as a *ParseError, or nil, and sets
// warnings. The checks run key by key; the reader wants the file's order.
func (ps *problems) err() error {
	warns := slices.Clone(ps.warns)
	slices.SortStableFunc(warns, inFileOrder)
	ps.warnings = nil
	for _, w := range warns {
		ps.warnings = append(ps.warnings, Warning{Pos: w.Pos(), Msg: w.Msg})
	}
	if len(ps.errs) == 0 {
		return nil
	}
	errs := slices.Clone(ps.errs)
	slices.SortStableFunc(errs, inFileOrder)
	if ps.dropped > 0 {
		errs = append(errs, Problem{File: ps.file, Msg: fmt.Sprintf("%d more problems not shown; fix the ones above first", ps.dropped)})
	}
	return &ParseError{Problems: errs}
}
