package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// costLimit bounds one condition's evaluation, in CEL's abstract cost units
// (about one per operation, one per ten bytes a string function reads). A
// sensible condition costs tens of units; a comprehension over 100 paths
// with a few string tests, a few thousand. The bound is this low because
// cel-go's runtime cost tracking is quadratic in the steps of a
// comprehension (measured with v0.31.0: reaching 10,000 takes about 10 ms,
// 100,000 about 2 s), and a condition runs on the path of every call it
// matches. Exceeding it is an evaluation error, which fails closed.
const costLimit = 10_000

// condition is a compiled `when` expression. A program is safe for
// concurrent use.
type condition struct {
	text string
	prg  cel.Program
}

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

// env returns the one CEL environment every condition compiles in: args as
// map(string, dyn), server and tool as strings, and path.within.
func env() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = cel.NewEnv(
			cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("server", cel.StringType),
			cel.Variable("tool", cel.StringType),
			// JSON has one number type; the decoder makes integers int and
			// the rest double, so a condition must be able to compare them.
			cel.CrossTypeNumericComparisons(true),
			cel.ExtendedValidations(),
			cel.Function("path.within",
				cel.Overload("path_within_string_string",
					[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
					cel.BinaryBinding(celPathWithin))),
		)
	})
	return celEnv, celEnvErr
}

func celPathWithin(p, root ref.Val) ref.Val {
	ps, ok := p.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(p)
	}
	rs, ok := root.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(root)
	}
	in, err := pathWithin(string(ps), string(rs))
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Bool(in)
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
	e, err := env()
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
				msg:  fmt.Sprintf("the condition does not compile: %s; expected a CEL expression over args, server and tool", ce.Message),
			})
		}
		return nil, false, out
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, false, []celProblem{{msg: fmt.Sprintf("the condition is of type %s; expected a boolean (write e.g. args.flag == true for a dynamic value)", ast.OutputType())}}
	}
	// No cel.OptOptimize: it would fold path.within calls over constants at
	// load, freezing a symlink's target as it was then.
	prg, err := e.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, false, []celProblem{{msg: fmt.Sprintf("the condition does not build into a program (%v); expected a CEL expression over args, server and tool", err)}}
	}
	c = &condition{text: text, prg: prg}
	if !readsVariables(ast) {
		v, _, err := prg.Eval(interpreter.EmptyActivation())
		switch {
		case err != nil:
			return nil, false, []celProblem{{msg: fmt.Sprintf("the condition reads no variable and always fails (%v); expected a condition over args, server or tool", err)}}
		case v != types.True:
			return nil, false, []celProblem{{msg: "the condition reads no variable and is always false, so the rule can never match; expected a condition over args, server or tool"}}
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
		case "args", "server", "tool":
			return true
		}
	}
	return false
}

// activation gives a condition its variables without building a map per
// evaluation.
type activation struct {
	args   traits.Mapper
	server string
	tool   string
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		return a.args, true
	case "server":
		return a.server, true
	case "tool":
		return a.tool, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evaluation holds what the conditions of one decision share: the call's
// arguments, decoded at most once.
type evaluation struct {
	// The call's fields, copied rather than pointed to, so that the call
	// stays on the caller's stack.
	args    []byte
	server  string
	tool    string
	act     *activation
	argsErr error
	done    bool
}

// eval evaluates a condition for the call, returning its value or the error
// that kept it from having one.
func (ev *evaluation) eval(c *condition) (bool, error) {
	if !ev.done {
		ev.done = true
		args, err := decodeArgs(ev.args)
		if err != nil {
			ev.argsErr = err
		} else {
			ev.act = &activation{args: args, server: ev.server, tool: ev.tool}
		}
	}
	if ev.argsErr != nil {
		return false, ev.argsErr
	}
	v, _, err := c.prg.Eval(ev.act)
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
	return s
}
