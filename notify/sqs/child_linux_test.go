package sqs_test

import (
	"os/exec"
	"syscall"
)

func init() {
	// Kill goaws with the test binary even when it dies without cleanup.
	configureChild = func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
}
