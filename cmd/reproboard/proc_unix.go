//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"time"
)

// inOwnGroup puts cmd in its own process group and makes cancelling it
// stop the whole group: go test's test binaries and what they started,
// not just the go command.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second // then SIGKILL, see killGroup
}

// killGroup kills what is left of a cancelled command's group. Only call
// it after a cancel: after a normal exit the group id may be reused.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
