//go:build !unix

package main

import (
	"os/exec"
	"time"
)

func inOwnGroup(cmd *exec.Cmd) { cmd.WaitDelay = 10 * time.Second }

func killGroup(cmd *exec.Cmd) {}
