package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// userFields are the fields of the user variable.
var userFields = []string{"sub", "email", "groups"}

// costLimit bounds one condition's evaluation, in CEL's abstract cost units
// (about one per operation, one per ten bytes a string function reads). A
// sensible condition costs tens of units; a comprehension over 100 paths
// with a few string tests, a few thousand. The bound is this low because
// cel-go's runtime cost tracking is quadratic in the steps of a
// comprehension (measured with v0.31.0: reaching 10,000 takes about 10 ms,
// 100,000 about 2 s), and a condition runs on the path of every call it
// matches. Exceeding it is an evaluation error, which fails closed.
const costLimit = 10_000

// condition is a compiled `when` expression: one program per path reading,
// built from the same checked expression, whose path functions resolve
// paths under that reading. A program is safe for concurrent use.
type condition struct {
	text string
	prg  [numReadings]cel.Program
	// paths is set when the expression calls a path function, so that its
	// value can depend on the reading.
	paths bool
}

// The path functions, by overload ID. pathOverloads lists them all, so that
// a condition that calls one is known to depend on the reading.
const (
	overloadPathWithin     = "path_within_string_string"
	overloadPathHasSegment = "path_has_segment_string_list_string"
)

var pathOverloads = []string{overloadPathWithin, overloadPathHasSegment}

// The CEL environments are built on the first condition compiled, never
// at package initialisation or for a policy without one: cel.NewEnv
// declares CEL's standard library each time (the set of them took some
// 0.14 ms in a test process, the first time), and a gate's cold start
// pays every step of its load before it answers the host. A policy with
// conditions builds them once, at its load, where a bad expression is
// still refused with its line and column. envBuilds counts the
// environments built, so that a test can tell that a policy without
// conditions built none.
var (
	celEnvOnce sync.Once
	celEnvs    [numReadings]*cel.Env
	celEnvErr  error
	envBuilds  atomic.Int32
)

// envFor returns the CEL environment of a reading: args as map(string,
// dyn), server and tool as strings, and the path functions bound to that
// reading. Every reading's environment declares the same names and
// overloads, so an expression checked in one plans in any of them.
func envFor(r reading) (*cel.Env, error) {
	celEnvOnce.Do(func() {
		for rd := range reading(numReadings) {
			celEnvs[rd], celEnvErr = newEnv(rd)
			if celEnvErr != nil {
				return
			}
		}
	})
	return celEnvs[r], celEnvErr
}

func newEnv(r reading) (*cel.Env, error) {
	envBuilds.Add(1)
	return cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("server", cel.StringType),
		cel.Variable("tool", cel.StringType),
		// A map rather than a declared type: a native type would link
		// cel-go's extension library (a tenth of the binary); the field
		// names are checked at load instead (checkUserFields).
		cel.Variable("user", cel.MapType(cel.StringType, cel.DynType)),
		// JSON has one number type; the decoder makes integers int and
		// the rest double, so a condition must be able to compare them.
		cel.CrossTypeNumericComparisons(true),
		cel.ExtendedValidations(),
		cel.Function("path.within",
			cel.Overload(overloadPathWithin,
				[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(func(p, root ref.Val) ref.Val { return celPathWithin(p, root, r) }))),
		cel.Function("path.has_segment",
			cel.Overload(overloadPathHasSegment,
				[]*cel.Type{cel.StringType, cel.ListType(cel.StringType)}, cel.BoolType,
				cel.BinaryBinding(func(p, names ref.Val) ref.Val { return celPathHasSegment(p, names, r) }))),
	)
}

func celPathWithin(p, root ref.Val, r reading) ref.Val {
	ps, ok := p.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(p)
	}
	rs, ok := root.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(root)
	}
	in, err := pathWithin(string(ps), string(rs), r)
	return celPathResult("path.within", in, err)
}

// celPathResult turns a path function's outcome into a CEL value; the
// error names the function, which quoteErrorDetail relies on.
func celPathResult(fn string, v bool, err error) ref.Val {
	if err != nil {
		return types.WrapErr(fmt.Errorf("%s: %w", fn, err))
	}
	return types.Bool(v)
}

func celPathHasSegment(p, names ref.Val, r reading) ref.Val {
	ps, ok := p.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(p)
	}
	l, ok := names.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(names)
	}
	n, ok := l.Size().(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(names)
	}
	pats := make([]string, 0, int(n))
	for i := range n {
		s, ok := l.Get(i).(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(l.Get(i))
		}
		pats = append(pats, string(s))
	}
	has, err := pathHasSegment(string(ps), pats, r)
	return celPathResult("path.has_segment", has, err)
}

// celProblem is a compile problem at a position inside the expression
// (1-based line and column; 0 when unknown).
type celProblem struct {
	line, col int
	msg       string
}

// compileCondition type-checks a `when` expression and refuses expressions
// that are not boolean or that can never be true: an expression that reads
// no variable is evaluated once here, and false (or an error) is refused.
// always reports a condition that reads no variable and is always true.
func compileCondition(text string) (c *condition, always bool, problems []celProblem) {
	e, err := envFor(readKernel)
	if err != nil {
		return nil, false, []celProblem{{msg: fmt.Sprintf("the condition environment failed to build (%v); expected it to build", err)}}
	}
	ast, iss := e.Compile(text)
	if iss != nil && iss.Err() != nil {
		var out []celProblem
		for _, ce := range iss.Errors() {
			out = append(out, celProblem{
				line: ce.Location.Line(),
				col:  ce.Location.Column() + 1,
				msg:  fmt.Sprintf("the condition does not compile: %s; expected a CEL expression over args, server, tool and user", ce.Message),
			})
		}
		return nil, false, out
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, false, []celProblem{{msg: fmt.Sprintf("the condition is of type %s; expected a boolean (write e.g. args.flag == true for a dynamic value)", ast.OutputType())}}
	}
	if out := append(checkUserFields(ast), checkSegmentPatterns(ast)...); len(out) > 0 {
		return nil, false, out
	}
	c = &condition{text: text, paths: callsAny(ast, pathOverloads)}
	for r := range reading(numReadings) {
		re, err := envFor(r)
		if err == nil {
			// No cel.OptOptimize: it would fold path function calls over
			// constants at load, freezing a symlink's target as it was then.
			c.prg[r], err = re.Program(ast, cel.CostLimit(costLimit))
		}
		if err != nil {
			return nil, false, []celProblem{{msg: fmt.Sprintf("the condition does not build into a program (%v); expected a CEL expression over args, server, tool and user", err)}}
		}
	}
	if !readsVariables(ast) {
		v, _, err := c.prg[readKernel].Eval(interpreter.EmptyActivation())
		switch {
		case err != nil:
			return nil, false, []celProblem{{msg: fmt.Sprintf("the condition reads no variable and always fails (%v); expected a condition over args, server, tool or user", err)}}
		case v != types.True:
			return nil, false, []celProblem{{msg: "the condition reads no variable and is always false, so the rule can never match; expected a condition over args, server, tool or user"}}
		}
		return c, true, nil
	}
	return c, false, nil
}

// readsVariables reports whether a checked expression refers to args,
// server or tool.
func readsVariables(ast *cel.Ast) bool {
	for _, r := range ast.NativeRep().ReferenceMap() {
		switch r.Name {
		case "args", "server", "tool", "user":
			return true
		}
	}
	return false
}

// callsAny reports whether a checked expression calls one of the overloads.
func callsAny(ast *cel.Ast, overloads []string) bool {
	for _, r := range ast.NativeRep().ReferenceMap() {
		for _, id := range r.OverloadIDs {
			if slices.Contains(overloads, id) {
				return true
			}
		}
	}
	return false
}

// checkSegmentPatterns requires the names of every path.has_segment call to
// be a list literal of valid one-segment patterns, so that a typo such as
// "[.ssh" or ".ssh/" is a load error rather than a rule that fails (or
// never matches) on every call.
func checkSegmentPatterns(a *cel.Ast) []celProblem {
	native := a.NativeRep()
	info := native.SourceInfo()
	var out []celProblem
	problem := func(id int64, format string, v ...any) {
		loc := info.GetStartLocation(id)
		out = append(out, celProblem{line: loc.Line(), col: loc.Column() + 1, msg: fmt.Sprintf(format, v...)})
	}
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != "path.has_segment" || len(e.AsCall().Args()) != 2 {
			return
		}
		names := e.AsCall().Args()[1]
		if names.Kind() != celast.ListKind || len(names.AsList().Elements()) == 0 {
			problem(names.ID(), "path.has_segment: the names are not a list of quoted names; expected a non-empty list literal such as [\".ssh\", \"*.env\"]")
			return
		}
		for _, el := range names.AsList().Elements() {
			s, ok := segmentLiteral(el)
			if !ok {
				problem(el.ID(), "path.has_segment: a name is not a quoted string; expected a literal such as \".ssh\"")
				continue
			}
			if err := validSegmentPattern(s); err != nil {
				problem(el.ID(), "path.has_segment: %v", err)
			}
		}
	}))
	return out
}

// checkUserFields refuses a condition that reads a field of user other
// than sub, email and groups (user.grups, user["mail"]): user is a map to
// CEL, and such a read would fail on every call instead of at load.
func checkUserFields(a *cel.Ast) []celProblem {
	native := a.NativeRep()
	info := native.SourceInfo()
	var out []celProblem
	isUser := func(e celast.Expr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == "user"
	}
	check := func(id int64, field string) {
		if !slices.Contains(userFields, field) {
			loc := info.GetStartLocation(id)
			out = append(out, celProblem{line: loc.Line(), col: loc.Column() + 1, msg: fmt.Sprintf("user has no field %q; expected user.sub, user.email or user.groups", field)})
		}
	}
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			if sel := e.AsSelect(); isUser(sel.Operand()) {
				check(e.ID(), sel.FieldName())
			}
		case celast.CallKind:
			c := e.AsCall()
			if c.FunctionName() == "_[_]" && len(c.Args()) == 2 && isUser(c.Args()[0]) {
				if s, ok := segmentLiteral(c.Args()[1]); ok {
					check(e.ID(), s)
				} else {
					loc := info.GetStartLocation(e.ID())
					out = append(out, celProblem{line: loc.Line(), col: loc.Column() + 1, msg: "user is indexed by a computed key; expected user.sub, user.email or user.groups"})
				}
			}
		}
	}))
	return out
}

// userValue is the user variable of one evaluation.
func userValue(u *User) ref.Val {
	if u == nil {
		u = &User{}
	}
	groups := u.Groups
	if groups == nil {
		groups = []string{}
	}
	return types.DefaultTypeAdapter.NativeToValue(map[string]any{"sub": u.Sub, "email": u.Email, "groups": groups})
}

func segmentLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// validSegmentPattern checks one name of path.has_segment: a path.Match
// pattern that matches within one segment.
func validSegmentPattern(s string) error {
	switch {
	case s == "" || s == "." || s == "..":
		return fmt.Errorf("the name %q can never be a segment of a resolved path; expected a file or directory name such as \".ssh\"", s)
	case strings.ContainsRune(s, '/'):
		return fmt.Errorf("the name %q contains /, and a segment never does; expected one name such as \".ssh\" (list each segment on its own)", s)
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("the name %q is not a valid pattern (%v); expected a name or a glob such as *.env (* ? [a-z], \\ escapes)", s, err)
	}
	return nil
}

// activation gives a condition its variables without building a map per
// evaluation.
type activation struct {
	args   traits.Mapper
	server string
	tool   string
	user   ref.Val
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		return a.args, true
	case "server":
		return a.server, true
	case "tool":
		return a.tool, true
	case "user":
		return a.user, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evaluation holds what the conditions of one decision share: the call's
// arguments, decoded at most once, and the path reading the conditions are
// evaluated under.
type evaluation struct {
	// The call's fields, copied rather than pointed to, so that the call
	// stays on the caller's stack.
	args    []byte
	server  string
	tool    string
	user    User
	act     *activation
	argsErr error
	done    bool

	// keys is how argument names are looked up in this pass, and whether
	// a lookup matched one only under case folding.
	keys *keyLookup

	// reading is how the path functions resolve paths in this pass.
	reading reading
	// readPaths is set once a condition that calls a path function has
	// been evaluated, so that Decide knows whether another reading could
	// decide differently.
	readPaths bool
}

// eval evaluates a condition for the call, returning its value or the error
// that kept it from having one.
func (ev *evaluation) eval(c *condition) (bool, error) {
	if !ev.done {
		ev.done = true
		// Allocated here, not held in ev, so that ev stays on the stack of
		// a decision that evaluates no condition.
		ev.keys = &keyLookup{}
		args, err := decodeArgsWith(ev.args, ev.keys)
		if err != nil {
			ev.argsErr = err
		} else {
			ev.act = &activation{args: args, server: ev.server, tool: ev.tool, user: userValue(&ev.user)}
		}
	}
	if ev.argsErr != nil {
		return false, ev.argsErr
	}
	if c.paths {
		ev.readPaths = true
	}
	v, _, err := c.prg[ev.reading].Eval(ev.act)
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %s; expected a boolean", v.Type().TypeName())
	}
	return bool(b), nil
}

// errCostLimit is matched in messages so that a user sees that the cost
// limit, not a bug, ended the evaluation.
var errCostLimit = errors.New("operation cancelled: actual cost limit exceeded")

func conditionErrorText(err error) string {
	s := err.Error()
	if strings.Contains(s, errCostLimit.Error()) {
		return fmt.Sprintf("its evaluation exceeded the cost limit of %d", costLimit)
	}
	return quoteErrorDetail(s)
}

// quoteErrorDetail quotes what follows the first ": " of an error that is
// not one of the gate's own. CEL's messages put argument values there
// unquoted ("no such key: <a value used as a key>", "error parsing regexp:
// ... `<a value used as a pattern>`"), and the audit log, which replaces
// every quoted string by its size and digest, must not carry them; the
// model, which reads the reason, still sees them. The gate's own errors
// (the path functions', the arguments' decoding) quote what they quote.
func quoteErrorDetail(s string) string {
	for _, own := range []string{"path.within: ", "path.has_segment: ", "the arguments ", "found the key ", "found two keys ", "a number of "} {
		if strings.HasPrefix(s, own) {
			return s
		}
	}
	head, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return s
	}
	return head + ": " + strconv.Quote(rest)
}
