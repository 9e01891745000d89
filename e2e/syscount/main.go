// Command syscount counts the system calls, context switches and wake-ups
// an mcp-gate process (or the floor relay, e2e/minrelay) makes per echo
// call, by kind and by descriptor, so that what a call costs in the kernel
// is counted rather than guessed. It starts the process in front of the
// echo server (e2e/echoserver) as e2e/bench does, warms it up, attaches
// `perf record` to every thread of it for the raw_syscalls and sched
// tracepoints, enables them (perf's control FIFO, acknowledged) only while
// the load generator (e2e/loadgen) makes N calls, and divides what perf
// saw by N. It fails rather than print counts perf dropped events from.
//
//	go build -o /tmp/syscount ./e2e/syscount
//	taskset -c 0 /tmp/syscount -gate BIN -echo ECHO -c 1 -calls 5000    # pinned
//	/tmp/syscount -floor MINRELAY -echo ECHO -c 8 -calls 20000           # unpinned
//
// Run it under `taskset -c 0` to measure the pinned case: the gate and the
// echo server inherit the mask; perf itself runs on every CPU (-perf-cpus)
// so that its own work does not take the measured CPU. perf's tracepoints
// cost little next to strace's stops, but they cost something: read the
// counts, not the time.
//
// Descriptors are named from /proc after the warm-up: host-in and
// host-out (the gate's stdin and stdout), up-in and up-out (the pipes to
// and from the echo server), audit (the audit log), and the rest by what
// they are (eventpoll, eventfd, anon, pipe, socket, file). A read or write
// that returned EAGAIN, a futex wait or wake (with the number it woke), an
// epoll wait that blocked or only polled are counted apart.
//
// Linux only: it needs perf and /proc.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gate/mcp-gate/e2e/loadgen"
)

type config struct {
	gate, floor, echo string
	conc, calls       int
	perf              string
	perfCPUs          string
	keep              string
	top               int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.gate, "gate", "", "mcp-gate binary to measure")
	flag.StringVar(&cfg.floor, "floor", "", "e2e/minrelay binary to measure instead of a gate")
	flag.StringVar(&cfg.echo, "echo", "", "e2e/echoserver binary (required)")
	flag.IntVar(&cfg.conc, "c", 1, "calls outstanding: 1 (one at a time) or more (pipelined)")
	flag.IntVar(&cfg.calls, "calls", 5000, "echo calls counted")
	flag.StringVar(&cfg.perf, "perf", "perf", "the perf command; empty: no tracing, only the process's user and system CPU time per call")
	flag.StringVar(&cfg.perfCPUs, "perf-cpus", "all", "CPUs perf runs on (taskset -c LIST), or all")
	flag.StringVar(&cfg.keep, "keep", "", "keep perf's data file here")
	flag.IntVar(&cfg.top, "top", 40, "rows printed")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "syscount:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	if cfg.echo == "" || (cfg.gate == "") == (cfg.floor == "") {
		return fmt.Errorf("want -echo and one of -gate or -floor")
	}
	dir, err := os.MkdirTemp("", "syscount-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := loadgen.PrivateDirs(loadgen.WithoutGOMAXPROCS(os.Environ()), dir)
	target := loadgen.Target{Name: "gate", Tool: func(s string) string { return "echo__" + s }}
	if cfg.floor != "" {
		target.Name = "floor"
		target.Command = func() *exec.Cmd {
			cmd := exec.Command(cfg.floor, "-strip", "echo__", "--", cfg.echo)
			cmd.Env = env
			return cmd
		}
	} else {
		servers, err := loadgen.EchoServers(dir, cfg.echo)
		if err != nil {
			return err
		}
		policy := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(policy, []byte("version: 1\nfallback: deny\nallow:\n  - \"mcp:echo:*\"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Mkdir(filepath.Join(dir, "audit"), 0o700); err != nil {
			return err
		}
		target.Command = func() *exec.Cmd {
			cmd := exec.Command(cfg.gate, "serve", "--servers", servers, "--policy", policy, "--audit-log", filepath.Join(dir, "audit", "audit.jsonl"))
			cmd.Env = env
			return cmd
		}
	}
	c, err := target.Open()
	if err != nil {
		return err
	}
	defer c.Close()
	echo := target.Echo()
	if _, err := loadgen.Latency(c, echo, 300, nil); err != nil {
		return err
	}
	if err := c.Pipeline(echo, max(cfg.conc, 1), 300); err != nil {
		return err
	}
	pid := c.Pid()
	fds, err := nameFds(pid)
	if err != nil {
		return err
	}

	if cfg.perf == "" {
		// No tracing: the process's CPU time per call, user and system,
		// undisturbed.
		u0, s0, err := cpuTimes(pid)
		if err != nil {
			return err
		}
		took, err := calls(cfg, c, echo)
		if err != nil {
			return err
		}
		u1, s1, err := cpuTimes(pid)
		if err != nil {
			return err
		}
		n := time.Duration(cfg.calls)
		fmt.Printf("%s, c=%d, %d calls in %v (%.1f µs/call): CPU per call user %v, system %v\n", target.Name, cfg.conc, cfg.calls,
			took.Round(time.Millisecond), float64(took.Microseconds())/float64(cfg.calls), (u1-u0)/n, (s1-s0)/n)
		return nil
	}
	data := filepath.Join(dir, "perf.data")
	if cfg.keep != "" {
		data = cfg.keep
	}
	// perf starts with its events disabled and is told through a control
	// FIFO to enable them once attached, and to disable them after the
	// calls, each acknowledged: what it counts is the calls', however
	// long it takes to attach to every thread.
	ctl, ack := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack")
	for _, f := range []string{ctl, ack} {
		if err := mkfifo(f); err != nil {
			return fmt.Errorf("control FIFO for perf: %w", err)
		}
	}
	args := []string{cfg.perf, "record", "-q", "-o", data, "-m", "16M", "-D", "-1", "--control", "fifo:" + ctl + "," + ack,
		"-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit",
		"-e", "sched:sched_switch", "-e", "sched:sched_wakeup",
		"-p", strconv.Itoa(pid)}
	if cfg.perfCPUs != "" && cfg.perfCPUs != "none" {
		cpus := cfg.perfCPUs
		if cpus == "all" {
			cpus = fmt.Sprintf("0-%d", allCPUs()-1)
		}
		args = append([]string{"taskset", "-c", cpus}, args...)
	}
	rec := exec.Command(args[0], args[1:]...)
	var recErr strings.Builder
	rec.Stderr = &recErr
	if err := rec.Start(); err != nil {
		return fmt.Errorf("starting perf: %w", err)
	}
	stop := func() {
		_ = rec.Process.Signal(syscall.SIGINT)
		// perf ends on the interrupt, whether or not it reports it as
		// its status; what it wrote is read below.
		_ = rec.Wait()
	}
	ctlW, err := os.OpenFile(ctl, os.O_WRONLY, 0)
	if err != nil {
		stop()
		return err
	}
	defer ctlW.Close()
	ackR, err := os.OpenFile(ack, os.O_RDONLY, 0)
	if err != nil {
		stop()
		return err
	}
	defer ackR.Close()
	acks := bufio.NewReader(ackR)
	command := func(c string) error {
		if _, err := ctlW.WriteString(c + "\n"); err != nil {
			return err
		}
		line, err := acks.ReadString('\n')
		if err != nil || strings.Trim(line, "\x00\n ") != "ack" {
			return fmt.Errorf("perf did not acknowledge %s (%q, %v): %s", c, line, err, recErr.String())
		}
		return nil
	}
	if err := command("enable"); err != nil {
		stop()
		return err
	}
	took, err := calls(cfg, c, echo)
	if derr := command("disable"); derr != nil && err == nil {
		err = derr
	}
	stop()
	if err != nil {
		return err
	}
	if strings.Contains(recErr.String(), "LOST") || strings.Contains(recErr.String(), "lost") {
		return fmt.Errorf("perf lost events: %s", recErr.String())
	}
	script := exec.Command(cfg.perf, "script", "-i", data, "-F", "tid,event,trace")
	var scriptErr strings.Builder
	script.Stderr = &scriptErr
	out, err := script.StdoutPipe()
	if err != nil {
		return err
	}
	if err := script.Start(); err != nil {
		return err
	}
	t := newTally(fds)
	if err := t.read(out); err != nil {
		return err
	}
	if err := script.Wait(); err != nil {
		return fmt.Errorf("perf script: %w: %s", err, scriptErr.String())
	}
	if t.lost > 0 {
		return fmt.Errorf("perf lost %d events: count again with fewer calls", t.lost)
	}
	t.print(os.Stdout, target.Name, cfg, took)
	return nil
}

// cpuTimes is pid's user and system CPU time so far (/proc/PID/stat, in
// clock ticks of 10 ms: count enough calls).
func cpuTimes(pid int) (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(u) * 10 * time.Millisecond, time.Duration(k) * 10 * time.Millisecond, nil
}

// allCPUs is the number of CPUs online, whatever this process's mask.
func allCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 1
	}
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexAny(s, "-,"); i >= 0 {
		s = s[i+1:]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 1
	}
	return n + 1
}

// nameFds names the descriptors of pid by what is at their other end.
func nameFds(pid int) (map[int]string, error) {
	names := map[int]string{0: "host-in", 1: "host-out", 2: "stderr"}
	// A process may reopen its stdin and stdout (the gate and the floor
	// do, to make them non-blocking descriptions of their own): the same
	// pipe under another number is named alike.
	std := map[string]string{}
	for fd, name := range []string{"host-in", "host-out"} {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err == nil && strings.HasPrefix(link, "pipe:") {
			std[link] = name
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	// The echo server's stdin and stdout pipes, by inode.
	upIn, upOut := "", ""
	// (Children are listed by the thread that started them.)
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		kids, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, k := range strings.Fields(string(kids)) {
			upIn, _ = os.Readlink("/proc/" + k + "/fd/0")
			upOut, _ = os.Readlink("/proc/" + k + "/fd/1")
		}
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		if err != nil {
			continue
		}
		switch {
		case std[link] != "":
			names[fd] = std[link]
		case link == upIn && upIn != "":
			names[fd] = "up-in"
		case link == upOut && upOut != "":
			names[fd] = "up-out"
		case strings.HasSuffix(link, ".jsonl"):
			names[fd] = "audit"
		case strings.HasPrefix(link, "anon_inode:"):
			names[fd] = strings.Trim(strings.TrimPrefix(link, "anon_inode:"), "[]")
		case strings.HasPrefix(link, "pipe:"):
			names[fd] = "pipe"
		case strings.HasPrefix(link, "socket:"):
			names[fd] = "socket"
		default:
			names[fd] = "file"
		}
	}
	return names, nil
}

// syscalls names the x86-64 system calls a Go program makes.
var syscalls = map[int]string{
	0: "read", 1: "write", 3: "close", 7: "poll", 9: "mmap", 10: "mprotect", 11: "munmap",
	13: "rt_sigaction", 14: "rt_sigprocmask", 15: "rt_sigreturn", 16: "ioctl", 19: "readv",
	20: "writev", 24: "sched_yield", 28: "madvise", 35: "nanosleep", 39: "getpid", 56: "clone",
	61: "wait4", 62: "kill", 72: "fcntl", 96: "gettimeofday", 98: "getrusage", 131: "sigaltstack",
	186: "gettid", 200: "tkill", 202: "futex", 204: "sched_getaffinity", 228: "clock_gettime",
	230: "clock_nanosleep", 232: "epoll_wait", 233: "epoll_ctl", 234: "tgkill", 247: "waitid",
	257: "openat", 262: "newfstatat", 281: "epoll_pwait", 290: "eventfd2", 318: "getrandom",
	332: "statx", 435: "clone3", 441: "epoll_pwait2", 5: "fstat", 8: "lseek", 17: "pread64",
	18: "pwrite64", 74: "fsync", 75: "fdatasync",
}

// fdCalls take a descriptor first.
var fdCalls = map[string]bool{"read": true, "write": true, "readv": true, "writev": true, "fcntl": true, "ioctl": true, "close": true, "pread64": true, "pwrite64": true, "fstat": true}

type tally struct {
	fds      map[int]string
	pending  map[string]enter // by tid
	counts   map[string]int
	threads  map[string]bool
	switches map[string]int    // the state a gate thread left the CPU in
	wakeups  map[string]int    // whom the process's threads woke: one of them, or another
	woken    map[[2]string]int // by pid and comm, while reading
	total    int
	lost     int             // exits without their entry: events perf dropped
	exited   map[string]bool // threads seen leaving a system call
}

type enter struct {
	nr   int
	args []string
}

func newTally(fds map[int]string) *tally {
	return &tally{fds: fds, pending: map[string]enter{}, counts: map[string]int{}, threads: map[string]bool{}, switches: map[string]int{}, wakeups: map[string]int{}, woken: map[[2]string]int{}, exited: map[string]bool{}}
}

// read takes perf script's lines (-F tid,event,trace).
func (t *tally) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		tid, ev := f[0], strings.TrimSuffix(f[1], ":")
		t.threads[tid] = true // perf records the process's threads alone
		switch ev {
		case "raw_syscalls:sys_enter":
			// NR 0 (fd, buf, ...)
			nr, _ := strconv.Atoi(f[3])
			rest := strings.Join(f[4:], " ")
			rest = strings.Trim(rest, "()")
			t.pending[tid] = enter{nr: nr, args: strings.Split(rest, ", ")}
		case "raw_syscalls:sys_exit":
			// NR 0 = ret
			nr, _ := strconv.Atoi(f[3])
			ret := int64(0)
			if len(f) > 5 {
				ret, _ = strconv.ParseInt(f[5], 10, 64)
			}
			e, ok := t.pending[tid]
			delete(t.pending, tid)
			if !ok || e.nr != nr {
				// A call entered before the events were enabled (the
				// thread's first exit) is not counted; any other exit
				// without its entry is an event perf dropped.
				if t.exited[tid] {
					t.lost++
				}
				t.exited[tid] = true
				continue
			}
			t.exited[tid] = true
			t.counts[t.key(e, ret)]++
			t.total++
		case "sched:sched_switch":
			// prev_comm=X prev_pid=N prev_prio=P prev_state=S ==> next_comm=...
			state := field(f, "prev_state=")
			if field(f, "prev_pid=") == tid {
				t.switches["out, "+stateName(state)]++
			}
		case "sched:sched_wakeup":
			// comm=X pid=N prio=P target_cpu=C: whom a thread of the
			// process woke, told apart once every thread is known.
			t.woken[[2]string{field(f, "pid="), field(f, "comm=")}]++
		}
	}
	for w, n := range t.woken {
		who := "other"
		if t.threads[w[0]] {
			who = "gate thread"
		}
		t.wakeups["woke "+who+" ("+w[1]+")"] += n
	}
	return sc.Err()
}

func field(f []string, prefix string) string {
	for _, s := range f {
		if strings.HasPrefix(s, prefix) {
			return strings.TrimPrefix(s, prefix)
		}
	}
	return ""
}

func stateName(s string) string {
	switch s {
	case "S":
		return "to sleep (S)"
	case "R", "R+":
		return "preempted (R)"
	}
	return s
}

func hex(s string) int64 {
	v, _ := strconv.ParseUint(s, 16, 64)
	return int64(v)
}

// key is what one system call is counted as.
func (t *tally) key(e enter, ret int64) string {
	name, ok := syscalls[e.nr]
	if !ok {
		name = "NR" + strconv.Itoa(e.nr)
	}
	arg := func(i int) int64 {
		if i < len(e.args) {
			return hex(e.args[i])
		}
		return 0
	}
	res := ""
	if ret < 0 {
		res = " -> " + errName(-ret)
	}
	switch {
	case fdCalls[name]:
		fd := int(arg(0))
		what, ok := t.fds[fd]
		if !ok {
			what = "fd" + strconv.Itoa(fd)
		}
		return name + " " + what + res
	case name == "futex":
		op := arg(1) & 0x7f
		switch op {
		case 0, 9:
			return "futex wait" + res
		case 1, 10:
			if ret == 0 {
				return "futex wake (woke none)"
			}
			return "futex wake"
		}
		return "futex op" + strconv.FormatInt(op, 10) + res
	case name == "epoll_pwait" || name == "epoll_wait" || name == "epoll_pwait2":
		if arg(3) == 0 {
			if ret == 0 {
				return name + " poll (none ready)"
			}
			return name + " poll (ready)"
		}
		return name + " blocking" + res
	case name == "epoll_ctl":
		ops := map[int64]string{1: "add", 2: "del", 3: "mod"}
		return "epoll_ctl " + ops[arg(1)] + res
	}
	return name + res
}

func errName(n int64) string {
	switch n {
	case 11:
		return "EAGAIN"
	case 4:
		return "EINTR"
	case 110:
		return "ETIMEDOUT"
	}
	return "E" + strconv.FormatInt(n, 10)
}

func (t *tally) print(w io.Writer, name string, cfg config, took time.Duration) {
	n := float64(cfg.calls)
	fmt.Fprintf(w, "%s, c=%d, %d calls in %v (%.1f µs/call under perf), %d threads seen\n", name, cfg.conc, cfg.calls, took.Round(time.Millisecond), float64(took.Microseconds())/n, len(t.threads))
	fmt.Fprintf(w, "system calls per call: %.2f\n", float64(t.total)/n)
	rows := func(m map[string]int, limit int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if m[a] != m[b] {
				return m[b] - m[a]
			}
			return strings.Compare(a, b)
		})
		for i, k := range keys {
			if i == limit {
				break
			}
			fmt.Fprintf(w, "  %7.3f  %s\n", float64(m[k])/n, k)
		}
	}
	rows(t.counts, cfg.top)
	fmt.Fprintln(w, "context switches of the process's threads per call:")
	rows(t.switches, cfg.top)
	fmt.Fprintln(w, "wake-ups made by the process's threads per call:")
	rows(t.wakeups, cfg.top)
}

// calls makes the counted calls: cfg.calls echo calls, one at a time or
// cfg.conc outstanding, and says how long they took.
func calls(cfg config, c *loadgen.Client, echo loadgen.Call) (time.Duration, error) {
	t0 := time.Now()
	var err error
	if cfg.conc <= 1 {
		_, err = loadgen.Latency(c, echo, cfg.calls, nil)
	} else {
		err = c.Pipeline(echo, cfg.conc, cfg.calls)
	}
	return time.Since(t0), err
}
