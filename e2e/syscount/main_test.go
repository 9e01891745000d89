package main

import (
	"strings"
	"testing"
)

// perf script's lines (-F tid,event,trace) as perf 6.1 prints them, from
// a gate's run: the counts are by call, descriptor and outcome, a thread's
// first exit (its call entered before the events were enabled) is not
// counted, and switches and wake-ups are the process's own.
func TestTally(t *testing.T) {
	const script = ` 3462  raw_syscalls:sys_exit: NR 281 = 1
 3462     sched:sched_wakeup: comm=syscount pid=3443 prio=120 target_cpu=000
 3462 raw_syscalls:sys_enter: NR 0 (b, 3d7622380000, 10000, 0, 0, 0)
 3462  raw_syscalls:sys_exit: NR 0 = 109
 3462 raw_syscalls:sys_enter: NR 0 (b, 3d7622380000, 10000, 0, 0, 0)
 3462  raw_syscalls:sys_exit: NR 0 = -11
 3462 raw_syscalls:sys_enter: NR 202 (1448140, 81, 1, 0, 0, 0)
 3462     sched:sched_wakeup: comm=gate pid=3455 prio=120 target_cpu=000
 3462  raw_syscalls:sys_exit: NR 202 = 1
 3462 raw_syscalls:sys_enter: NR 20 (e, 3d762240c3f0, 1, 0, 0, 0)
 3462     sched:sched_wakeup: comm=echo pid=3460 prio=120 target_cpu=000
 3462  raw_syscalls:sys_exit: NR 20 = 103
 3462 raw_syscalls:sys_enter: NR 281 (4, 7ffd, 80, 0, 0, 8)
 3462  raw_syscalls:sys_exit: NR 281 = 0
 3462 raw_syscalls:sys_enter: NR 281 (4, 7ffd, 80, ffffffff, 0, 8)
 3462     sched:sched_switch: prev_comm=gate prev_pid=3462 prev_prio=120 prev_state=S ==> next_comm=echo next_pid=3460 next_prio=120
 3462  raw_syscalls:sys_exit: NR 281 = 1
 3455 raw_syscalls:sys_enter: NR 202 (1448140, 80, 0, 0, 0, 0)
 3455     sched:sched_switch: prev_comm=gate prev_pid=3455 prev_prio=120 prev_state=R ==> next_comm=gate next_pid=3462 next_prio=120
 3455  raw_syscalls:sys_exit: NR 202 = 0
`
	tl := newTally(map[int]string{11: "host-in", 14: "up-in"})
	if err := tl.read(strings.NewReader(script)); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"read host-in":                  1,
		"read host-in -> EAGAIN":        1,
		"futex wake":                    1,
		"writev up-in":                  1,
		"epoll_pwait poll (none ready)": 1,
		"epoll_pwait blocking":          1,
		"futex wait":                    1,
	}
	for k, n := range want {
		if tl.counts[k] != n {
			t.Errorf("%q counted %d times, want %d", k, tl.counts[k], n)
		}
	}
	if len(tl.counts) != len(want) || tl.total != 7 || tl.lost != 0 {
		t.Errorf("counts %v, total %d, lost %d: want only %v, 7 and 0", tl.counts, tl.total, tl.lost, want)
	}
	if tl.switches["out, to sleep (S)"] != 1 || tl.switches["out, preempted (R)"] != 1 {
		t.Errorf("switches %v", tl.switches)
	}
	if tl.wakeups["woke gate thread (gate)"] != 1 || tl.wakeups["woke other (echo)"] != 1 || tl.wakeups["woke other (syscount)"] != 1 {
		t.Errorf("wake-ups %v", tl.wakeups)
	}
}

// An exit whose entry perf dropped, after the thread's first, is counted
// as lost: syscount then fails rather than print short counts.
func TestTallyLost(t *testing.T) {
	const script = ` 7  raw_syscalls:sys_exit: NR 0 = 1
 7 raw_syscalls:sys_enter: NR 1 (1, 0, 1, 0, 0, 0)
 7  raw_syscalls:sys_exit: NR 1 = 1
 7  raw_syscalls:sys_exit: NR 0 = 1
`
	tl := newTally(nil)
	if err := tl.read(strings.NewReader(script)); err != nil {
		t.Fatal(err)
	}
	if tl.lost != 1 || tl.total != 1 {
		t.Errorf("lost %d, total %d: want 1 and 1", tl.lost, tl.total)
	}
}
