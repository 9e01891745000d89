//go:build linux

package approvals

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// peerOf reads the credentials the kernel recorded when the peer
// connected (SO_PEERCRED).
func peerOf(c *net.UnixConn) (pid, uid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if serr != nil {
		return 0, 0, serr
	}
	return int(cred.Pid), int(cred.Uid), nil
}

// procStat returns a process's parent and session ids from
// /proc/PID/stat. The command name in parentheses may hold any byte, so
// the fields are read after its last ')'.
func procStat(pid int) (ppid, sid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseStat(pid, b)
}

// parseStat reads the parent and session ids from the text of
// /proc/PID/stat.
func parseStat(pid int, b []byte) (ppid, sid int, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat has no command field", pid)
	}
	f := bytes.Fields(b[i+1:])
	// state ppid pgrp session ...
	if len(f) < 4 {
		return 0, 0, fmt.Errorf("/proc/%d/stat is short", pid)
	}
	if ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: parent: %w", pid, err)
	}
	if sid, err = strconv.Atoi(string(f[3])); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: session: %w", pid, err)
	}
	return ppid, sid, nil
}

const peerChecks = true
