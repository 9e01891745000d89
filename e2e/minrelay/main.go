// Command minrelay is the least a stdio MCP relay can do: it starts its
// upstream and copies newline-delimited messages both ways, dropping a name
// prefix from requests, with no JSON parsing, no policy, no audit and no
// guard. e2e/bench -floor measures it in the gate's place, so that the
// ratios a relay process pays on a machine (its own reads, writes and
// process switches) are known apart from what the gate does on top.
//
//	minrelay -strip echo__ -- /path/to/echoserver
//
// It writes every whole line one read brought in one write, as crelay
// does and as the gate gathers a burst (group commit): a burst of k
// requests costs one read and one write, not k writes. A floor that wrote a
// line a write measured a write per message, not the least a relay costs:
// 13.6-14.6 µs a call at c=8 pinned, against 7-11 batched.
//
// It reads and writes as the gate does where it can: its stdin and stdout
// reopened non-blocking, so that every wait is in the netpoller, and each
// pipe grown to 1 MB (F_SETPIPE_SZ) the first time a line larger than the
// default 64 KB buffer crosses it, so that a 1 MB result crosses in one
// write and one wake-up.
//
// Every descriptor must stay non-blocking. A relay that read its upstream
// with a blocking read(2) (what (*os.File).Fd does to a pipe from
// os.Pipe or exec's StdoutPipe) waited about 12 ms per 1 MB call with two
// CPUs, against 1 ms: the copying goroutine sat in read(2) holding its P
// while the next request lay unread in its stdin, because the thread that
// had been waiting in the netpoller was the one now blocked in read(2), no
// other thread polled, and sysmon neither takes back a P in a system call
// while another P is idle nor polls the network itself before 10 ms
// without a poll. With one CPU (GOMAXPROCS=1, no idle P) sysmon takes the
// P back at once and hands it to a thread that polls, so there was no
// stall there.
//
// With -blocking (Linux) it measures the other consistent I/O mode issue 9
// names: every descriptor blocking, its stdin and stdout reopened so and
// the upstream's pipes made so, each direction a goroutine whose reads and
// writes block its thread, and nothing in the netpoller. Mixing the modes
// is what stalled above; all blocking does not.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	strip := flag.String("strip", "", "drop this prefix from the first quoted string that starts with it in each request (the gate's server__ names)")
	checksPolicy := flag.String("checks", "", "do the gate's work on each allowed tool call (decode, key checks, the policy's decision in this policy file, its audit record written before the burst is forwarded, the rename; the result guard on each response) with the gate's own packages, and nothing of its structure (checks.go)")
	auditPath := flag.String("audit", "", "with -checks, the audit log file")
	blocking := flag.Bool("blocking", false, "read and write every descriptor in blocking system calls, a goroutine and its thread each way, instead of through the netpoller (the other I/O mode issue 9 names; Linux)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "minrelay: usage: minrelay [-strip PREFIX] [-blocking] -- COMMAND [ARGS]")
		os.Exit(2)
	}
	var c *checks
	if *checksPolicy != "" {
		var err error
		if c, err = newChecks(*checksPolicy, *auditPath, *strip); err != nil {
			fmt.Fprintln(os.Stderr, "minrelay:", err)
			os.Exit(1)
		}
	}
	if err := run(*strip, *blocking, c, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "minrelay:", err)
		os.Exit(1)
	}
}

func run(strip string, blocking bool, c *checks, command []string) error {
	in, out := reopen(os.Stdin, os.O_RDONLY, blocking), reopen(os.Stdout, os.O_WRONLY, blocking)
	cmd := exec.Command(command[0], command[1:]...)
	var upIn io.WriteCloser
	var upOut io.ReadCloser
	var err error
	if blocking {
		upIn, upOut, err = blockingPipes(cmd)
	} else if upIn, err = cmd.StdinPipe(); err == nil {
		upOut, err = cmd.StdoutPipe()
	}
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	if blocking {
		// The child's ends, ours to close once it has them.
		cmd.Stdin.(io.Closer).Close()
		cmd.Stdout.(io.Closer).Close()
	}
	done := make(chan error, 1)
	var requests, responses func(out, whole []byte) ([]byte, error)
	if c != nil {
		requests, responses = c.requests, c.responses
	} else if strip != "" {
		from, to := []byte(`"`+strip), []byte(`"`)
		requests = func(out, whole []byte) ([]byte, error) { return stripped(out, whole, from, to), nil }
	}
	go func() { done <- copyLines(out, upOut, responses) }()
	err = copyLines(upIn, in, requests)
	upIn.Close()
	if werr := <-done; err == nil {
		err = werr
	}
	_ = cmd.Wait()
	return err
}

// largeLine is the size from which a line may not fit a pipe's default
// buffer (64 KB on Linux), and the reader's first buffer.
const largeLine = 64 << 10

// copyLines copies whole lines from r to w, dropping from's prefix in the
// first quoted string that starts with it in each line when from is set,
// until r ends. As crelay does, it writes every whole line one read brought
// in one write: a burst of requests costs one read and one write, not a
// write each. It grows r's pipe when a line outgrows the reader's first
// buffer, and w's when it writes more than the default pipe buffer may
// hold (pipeGrower).
func copyLines(w io.Writer, r io.Reader, transform func(out, whole []byte) ([]byte, error)) error {
	growR, growW := pipeGrower(r), pipeGrower(w)
	buf := make([]byte, largeLine)
	var out []byte
	n := 0
	for {
		if n == len(buf) {
			growR()
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := r.Read(buf[n:])
		n += m
		// Only what this read brought can end a line: the bytes before
		// it held none, or they would have been written.
		end := bytes.LastIndexByte(buf[n-m:n], '\n') + 1
		if end > 0 {
			end += n - m
		}
		if err == io.EOF {
			end = n // the last line, ended or not
		}
		if end > 0 {
			whole := buf[:end]
			if transform != nil {
				var err error
				if out, err = transform(out[:0], whole); err != nil {
					return err
				}
				whole = out
			}
			if len(whole) > largeLine {
				growW()
			}
			if _, werr := w.Write(whole); werr != nil {
				return werr
			}
			n = copy(buf, buf[end:n])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stripped appends the lines of whole to out, each with from's prefix
// dropped in the first quoted string that starts with it.
func stripped(out, whole, from, to []byte) []byte {
	for line := range bytes.Lines(whole) {
		if i := bytes.Index(line, from); i >= 0 {
			out = append(out, line[:i+len(to)]...)
			out = append(out, line[i+len(from):]...)
		} else {
			out = append(out, line...)
		}
	}
	return out
}

// reopen opens f's pipe again as a description of its own, non-blocking
// or blocking as asked, or returns f. It reaches the descriptor through Control, not Fd, which
// can make a description the runtime polls blocking (see pipeGrower).
func reopen(f *os.File, flag int, blocking bool) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil || fd < 0 {
		return f
	}
	path := fmt.Sprintf("/proc/self/fd/%d", fd)
	if blocking {
		if nf, err := openBlocking(path, flag); err == nil {
			return nf
		}
		return f
	}
	nf, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return f
	}
	return nf
}
