//go:build linux

// Linux only: the host's descriptors are made with Linux calls
// (SOCK_CLOEXEC, pipe2).

package e2e

import (
	"bufio"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGateOverHostStdioKinds runs the binary with stdin and stdout of the
// kinds hosts give: a socketpair (what Node hosts pass their children) and
// plain blocking pipes (a shell, most other hosts). The gate reads and
// writes them through the netpoller (rpc.Stdio) without changing the flags
// of the descriptions the host shares; a call goes through, and closing
// the host's end ends the gate normally.
func TestGateOverHostStdioKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"socketpair", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			var childIn, childOut, hostW, hostR *os.File
			switch kind {
			case "socketpair":
				sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				childIn, hostW = os.NewFile(uintptr(sp[0]), "child"), os.NewFile(uintptr(sp[1]), "host")
				childOut, hostR = childIn, hostW
			case "pipe":
				var in, out [2]int
				if err := syscall.Pipe2(in[:], syscall.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Pipe2(out[:], syscall.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				childIn, hostW = os.NewFile(uintptr(in[0]), "stdin"), os.NewFile(uintptr(in[1]), "host-w")
				hostR, childOut = os.NewFile(uintptr(out[0]), "host-r"), os.NewFile(uintptr(out[1]), "stdout")
			}
			defer hostW.Close()
			defer hostR.Close()
			g := gateCommand(t, map[string]server{"t": testserver("honest")})
			g.cmd.Stdin, g.cmd.Stdout = childIn, childOut
			if err := g.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The child holds its own copies now; the host keeps its ends.
			childIn.Close()
			if childOut != childIn {
				childOut.Close()
			}
			exited := make(chan error, 1)
			go func() { exited <- g.cmd.Wait() }()
			t.Cleanup(func() {
				_ = g.cmd.Process.Kill()
				<-exited
			})

			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(hostR)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			next := func(want string) string {
				t.Helper()
				select {
				case l, ok := <-lines:
					if !ok || !strings.Contains(l, want) {
						t.Fatalf("got %q (open %v), want a line with %s\n%s", l, ok, want, g.stderr.String())
					}
					return l
				case <-time.After(60 * time.Second):
					t.Fatalf("no line with %s\n%s", want, g.stderr.String())
				}
				return ""
			}
			send := func(line string) {
				t.Helper()
				if _, err := hostW.Write([]byte(line + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			next(`"id":1,"result"`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t__echo","arguments":{"text":"through ` + kind + `"}}}`)
			if l := next(`"id":2`); !strings.Contains(l, "through "+kind) {
				t.Fatalf("echo answer %q", l)
			}

			// The host ends the session: the gate sees EOF and exits 0.
			if kind == "socketpair" {
				_ = syscall.Shutdown(int(hostW.Fd()), syscall.SHUT_WR)
			} else {
				hostW.Close()
			}
			select {
			case err := <-exited:
				exited <- err
				if err != nil {
					t.Fatalf("gate exited with %v\n%s", err, g.stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the gate did not exit after its stdin ended\n%s", g.stderr.String())
			}
		})
	}
}
