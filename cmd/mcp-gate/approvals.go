package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcp-gate/mcp-gate/approvals"
)

const approvalsUsage = `Usage:
  mcp-gate approvals [list]              the open questions of every gate you run
  mcp-gate approvals approve ID [--session]
  mcp-gate approvals deny ID
  mcp-gate approvals watch               ask y/n in this terminal as questions arrive
  mcp-gate approvals web [--addr 127.0.0.1:0]
                                         a page on loopback; its one-time link is printed here only

Run it in a terminal of your own, not from the host: answers from a process
the host started, or from its login session, are refused.
`

// approvalsCmd answers the questions the gates of this user wait on
// (package approvals).
func approvalsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := pflag.NewFlagSet("approvals "+sub, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, approvalsUsage) }
	session := fs.Bool("session", false, "approve: also every later call of this tool that the same rule asks about, in the same host session")
	addr := fs.String("addr", "127.0.0.1:0", "web: the loopback address to serve on")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	c := approvals.Client{}
	nargs := func(n int) error {
		if fs.NArg() != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %q\n\n%s", sub, n, fs.Args(), approvalsUsage)}
		}
		return nil
	}
	switch sub {
	case "list":
		if err := nargs(0); err != nil {
			return err
		}
		qs, errs := c.List()
		for _, e := range errs {
			fmt.Fprintf(stderr, "mcp-gate approvals: %v\n", e)
		}
		if len(qs) == 0 {
			fmt.Fprintln(stdout, "no open questions")
		}
		for _, q := range qs {
			printQuestion(stdout, q)
		}
		if len(errs) > 0 {
			return errSilentFailure
		}
		return nil
	case "approve", "deny":
		if err := nargs(1); err != nil {
			return err
		}
		scope := ""
		if sub == "approve" && *session {
			scope = "session"
		} else if *session {
			return usageError{fmt.Errorf("--session is for approve only")}
		}
		if err := c.Answer(sub, fs.Arg(0), scope); err != nil {
			return err
		}
		if sub == "approve" {
			fmt.Fprintln(stdout, "approved")
		} else {
			fmt.Fprintln(stdout, "denied")
		}
		return nil
	case "watch":
		if err := nargs(0); err != nil {
			return err
		}
		return watch(ctx, c, stdin, stdout)
	case "web":
		if err := nargs(0); err != nil {
			return err
		}
		return approvals.ServeWeb(ctx, c, *addr, stdout, stderr)
	default:
		return usageError{fmt.Errorf("unknown subcommand %q\n\n%s", sub, approvalsUsage)}
	}
}

func printQuestion(w io.Writer, q approvals.Question) {
	host := ""
	if q.Client != "" {
		host = ", host " + q.Client
	}
	fmt.Fprintf(w, "%s  (gate pid %d%s, asked %s ago, expires in %s)\n", q.ID, q.GatePID, host,
		time.Since(q.Asked).Round(time.Second), time.Until(q.Expires).Round(time.Second))
	for _, l := range strings.Split(q.Message, "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
	fmt.Fprintln(w)
}

// watchSettle is how long a question must have been on the screen before
// watch takes an answer to it. A question that closes while the human types
// (withdrawn, timed out, answered elsewhere: the asker can time that) puts
// the next one in its place at once, and a "y" typed for the first would
// approve the second, which the human never read.
const watchSettle = 700 * time.Millisecond

// watch prompts for each question as it arrives. It reads the answers from
// a terminal only: y approves this call, s approves it for the session, n
// refuses; anything else leaves the question open. An answer that comes
// within watchSettle of its question appearing is not taken.
func watch(ctx context.Context, c approvals.Client, stdin io.Reader, stdout io.Writer) error {
	if !isTerminal(stdin) {
		return fmt.Errorf("watch reads your answers from a terminal, and its input is not one; use approve and deny from a script")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan approvals.Event, 64)
	go func() {
		_ = c.Watch(ctx, func(e approvals.Event) {
			select {
			case events <- e:
			case <-ctx.Done():
			}
		})
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	fmt.Fprintln(stdout, "watching for questions (Ctrl-C to stop)")
	return watchLoop(ctx, events, lines, stdout, c.Answer)
}

// watchLoop is watch's prompting: the questions as events bring them, the
// answers as the terminal's lines bring them, each answer sent by answer.
func watchLoop(ctx context.Context, events <-chan approvals.Event, lines <-chan string, stdout io.Writer, answer func(op, id, scope string) error) error {
	var queue []approvals.Question
	open := map[string]bool{}
	prompting := ""
	var shownAt time.Time
	const prompt = "approve? y = this call, s = this tool for the session, n = refuse: "
	for {
		if prompting == "" {
			for len(queue) > 0 && !open[queue[0].ID] {
				queue = queue[1:]
			}
			if len(queue) > 0 {
				prompting = queue[0].ID
				printQuestion(stdout, queue[0])
				fmt.Fprint(stdout, prompt)
				shownAt = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			switch e.Event {
			case "asked":
				if !open[e.Question.ID] {
					open[e.Question.ID] = true
					queue = append(queue, *e.Question)
				}
			case "closed":
				delete(open, e.ID)
				if e.ID == prompting {
					fmt.Fprintf(stdout, "\n(that question closed: %s)\n", e.Outcome)
					prompting = ""
				}
			case "error":
				fmt.Fprintf(stdout, "\n%s\n", e.Outcome)
			}
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			if prompting == "" {
				continue
			}
			if time.Since(shownAt) < watchSettle {
				fmt.Fprintf(stdout, "\nignored: that answer came as this question appeared, and may have been typed for the one before it; read it and answer again\n%s", prompt)
				continue
			}
			id := prompting
			prompting = ""
			var err error
			switch strings.ToLower(strings.TrimSpace(l)) {
			case "y", "yes":
				err = answer("approve", id, "once")
			case "s", "session":
				err = answer("approve", id, "session")
			case "n", "no":
				err = answer("deny", id, "")
			default:
				fmt.Fprintln(stdout, "left open")
				queue = append(queue[1:], queue[0])
				continue
			}
			if err != nil {
				fmt.Fprintf(stdout, "%v\n", err)
			}
			delete(open, id)
		}
	}
}
