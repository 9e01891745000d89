// Command minrelay is the least a stdio MCP relay can do: it starts its
// upstream and copies newline-delimited messages both ways, dropping a name
// prefix from requests, with no JSON parsing, no policy, no audit and no
// guard. e2e/bench -floor measures it in the gate's place, so that the
// ratios a relay process pays on a machine (its own reads, writes and
// process switches) are known apart from what the gate does on top.
//
//	minrelay -strip echo__ -- /path/to/echoserver
//
// It reads and writes as the gate does where it can: its stdin and stdout
// reopened non-blocking, so that every wait is in the netpoller.
package main

import (
	"bufio"
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
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "minrelay: usage: minrelay [-strip PREFIX] -- COMMAND [ARGS]")
		os.Exit(2)
	}
	if err := run(*strip, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "minrelay:", err)
		os.Exit(1)
	}
}

func run(strip string, command []string) error {
	in, out := reopen(os.Stdin, os.O_RDONLY), reopen(os.Stdout, os.O_WRONLY)
	cmd := exec.Command(command[0], command[1:]...)
	upIn, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	upOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- copyLines(out, upOut, nil, nil) }()
	from, to := []byte(`"`+strip), []byte(`"`)
	if strip == "" {
		from = nil
	}
	err = copyLines(upIn, in, from, to)
	upIn.Close()
	if werr := <-done; err == nil {
		err = werr
	}
	_ = cmd.Wait()
	return err
}

// copyLines copies lines from r to w, replacing the first from by to in
// each when from is set, until r ends.
func copyLines(w io.Writer, r io.Reader, from, to []byte) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 {
			if from != nil {
				line = bytes.Replace(line, from, to, 1)
			}
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
			line = line[:0]
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// reopen opens f's pipe again as a non-blocking description of its own,
// or returns f.
func reopen(f *os.File, flag int) *os.File {
	nf, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return f
	}
	return nf
}
