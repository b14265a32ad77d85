package testinfra

import (
	"errors"
	"os/exec"
	"syscall"
)

// childAttr puts a child in its own process group and has the kernel kill it
// if the test binary dies without running Main's cleanup.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killChild kills the child's whole process group.
func killChild(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
