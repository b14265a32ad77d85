package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is a process's role.
type Kind string

// Process kinds.
const (
	KindAPI    Kind = "api"
	KindReaper Kind = "reaper"
	KindWorker Kind = "worker"
)

// proc is one cairn or worker process the driver runs, kills, pauses and
// restarts. Its output goes to <dir>/<name>.log, appended across restarts.
type proc struct {
	name string
	kind Kind
	bin  string
	args []string
	env  func(gen int) []string // the environment of the gen-th start
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	gen    int
	// tl, when set, records each time the process goes up (started,
	// resumed) or down (killed, paused, stopped, exited): the liveness
	// check counts only the time a worker could claim (liveness.go). The
	// store process is marked up only once it serves (reviveStore).
	tl *timeline
}

// markUp records that the process runs (the store's start is marked by
// the driver once it serves).
func (p *proc) markUp() {
	if p.kind != KindStore {
		p.tl.mark(p.name, true)
	}
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *proc) startLocked() error {
	logf, err := os.OpenFile(filepath.Join(p.dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "---- start %d at %s\n", p.gen, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env(p.gen)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.gen++
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); p.tl.mark(p.name, false); close(exited) }()
	p.cmd, p.exited, p.paused = cmd, exited, false
	p.markUp()
	return nil
}

// alive reports whether the process runs (paused counts as running).
func (p *proc) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.aliveLocked()
}

func (p *proc) aliveLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.aliveLocked() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p.paused = false
}

// cpuTime is the CPU time the running process has used (user and
// system, from /proc; 0 where it cannot be read).
func (p *proc) cpuTime() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.aliveLocked() {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces), from field 3:
	// utime and stime are fields 14 and 15, in clock ticks (100 a second
	// on Linux).
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// abort sends SIGABRT (a Go program with GOTRACEBACK=crash dumps every
// goroutine and exits), and SIGKILL if it has not exited after grace.
func (p *proc) abort(grace time.Duration) { p.end(syscall.SIGABRT, grace) }

// stop ends the process with SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) { p.end(syscall.SIGTERM, grace) }

// end sends sig to a live process (resumed first if paused), and SIGKILL
// if it has not exited after grace.
func (p *proc) end(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.aliveLocked() {
		return
	}
	if p.paused {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	p.paused = false
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

func (p *proc) pause() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.aliveLocked() || p.paused {
		return false
	}
	p.paused = p.cmd.Process.Signal(syscall.SIGSTOP) == nil
	if p.paused {
		p.tl.mark(p.name, false)
	}
	return p.paused
}

func (p *proc) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aliveLocked() && p.paused {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.markUp()
	}
	p.paused = false
}

func (p *proc) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused && p.aliveLocked()
}

// ensure restarts the process if it is not running and resumes it if it
// is paused.
func (p *proc) ensure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.aliveLocked() {
		if p.paused {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.paused = false
			p.markUp()
		}
		return nil
	}
	return p.startLocked()
}
