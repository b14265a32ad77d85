package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The tests of tty_*.golden run the command line as a process of its own
// twice: on a real pseudo-terminal (a fixed size, TERM=xterm-256color,
// NO_COLOR unset), as a person at a terminal sees it, and piped, as a
// script reads it. The process is this test binary, which runs main when
// CAIRN_TEST_MAIN=1 (TestMain).

// The terminal the CLI runs on.
const (
	ttyRows = 40
	ttyCols = 160
	ttyTerm = "xterm-256color"
)

// mode is how a process's output is read: on a terminal or piped.
type mode struct {
	name string // "tty" or "piped": the golden file's suffix
	tty  bool
}

var modes = []mode{{"tty", true}, {"piped", false}}

// proc is the command line running as a process.
type proc struct {
	t      *testing.T
	args   []string
	cmd    *exec.Cmd
	tty    *os.File    // the terminal's controlling side, on a terminal
	out    *syncBuffer // what the process wrote to the terminal, or its stdout when piped
	errOut *syncBuffer // its stderr when piped (on a terminal, stderr is in out)
	read   chan struct{}
}

// cairnEnv is the environment of a CLI process: the test's, less what
// changes the CLI's output, plus env.
func cairnEnv(env ...string) []string {
	var keep []string
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "TERM", "NO_COLOR", "CAIRN_SERVER", "CAIRN_KEY", "CAIRN_KEYRING", "COLUMNS", "LINES", "CAIRN_TEST_MAIN":
			continue
		}
		keep = append(keep, kv)
	}
	return append(append(keep, "CAIRN_TEST_MAIN=1", "TERM="+ttyTerm), env...)
}

// startCLI starts the command line args in mode m; the process is killed
// when the test ends if it still runs.
func startCLI(t *testing.T, m mode, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, args: args, out: &syncBuffer{}, errOut: &syncBuffer{}, read: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = cairnEnv()
	if m.tty {
		f, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: ttyRows, Cols: ttyCols})
		if err != nil {
			t.Fatalf("start on a terminal: %v", err)
		}
		p.tty = f
		go func() {
			// Reading ends with EIO once the process and every child of
			// it closed the terminal and all it wrote was read.
			io.Copy(p.out, f)
			close(p.read)
		}()
	} else {
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		close(p.read)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if p.tty != nil {
			p.tty.Close()
		}
	})
	return p
}

// wait waits (a minute at most) for the process to exit and returns its
// exit status.
func (p *proc) wait() int {
	p.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-exited
		p.t.Fatalf("cairn %s still ran after a minute:\n%s%s", strings.Join(p.args, " "), p.out.String(), p.errOut.String())
	}
	select {
	case <-p.read:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("cairn %s: its terminal output did not end", strings.Join(p.args, " "))
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		p.t.Fatalf("cairn %s: %v", strings.Join(p.args, " "), err)
		return -1
	}
}

// waitFor waits until the process's output shows want.
func (p *proc) waitFor(want string) {
	p.t.Helper()
	waitOutput(p.t, p.out, want)
}

// interrupt is Ctrl-C: on a terminal the ETX character, which the
// terminal turns into a SIGINT to the process group in its foreground;
// piped, a SIGINT to the process, as a shell's kill -INT.
func (p *proc) interrupt() {
	p.t.Helper()
	if p.tty != nil {
		if _, err := p.tty.Write([]byte{0x03}); err != nil {
			p.t.Fatal(err)
		}
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		p.t.Fatal(err)
	}
}

// transcript is the process's session as a golden holds it, not yet
// normalised: the command, what it wrote (on a terminal as the screen
// shows it, see screen; piped, stdout then stderr after "stderr:"), and
// its exit status when not 0.
func (p *proc) transcript(code int) string {
	s := "$ cairn " + strings.Join(p.args, " ") + "\n"
	if p.tty != nil {
		s += screen(p.out.String())
	} else {
		s += p.out.String()
		if e := p.errOut.String(); e != "" {
			s += "stderr:\n" + e
		}
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if code != 0 {
		s += "exit status " + strconv.Itoa(code) + "\n"
	}
	return s
}

// csiRE is a control sequence: ESC [ parameters, a final byte.
var csiRE = regexp.MustCompile(`^\x1b\[[0-9;?]*[@-~]`)

// screen is what a terminal shows for out, line by line: a carriage
// return goes back to the line's start, ESC[K erases to its end, and
// what is written after either overwrites what was there (the live
// status line of --wait leaves only its last state, if any). Colour
// codes (ESC[…m) take no column and are kept, written \e[…m; any other
// sequence is kept in that form too.
func screen(out string) string {
	out = strings.ReplaceAll(out, "\r\n", "\n") // the terminal's newline
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		var cells []string
		col, pending := 0, ""
		for i := 0; i < len(l); {
			if seq := csiRE.FindString(l[i:]); seq != "" {
				i += len(seq)
				switch seq[len(seq)-1] {
				case 'K':
					cells = cells[:min(col, len(cells))]
				default:
					pending += `\e` + seq[1:]
				}
				continue
			}
			if l[i] == '\r' {
				col, i = 0, i+1
				continue
			}
			// One character (bytes of a UTF-8 sequence stay together).
			j := i + 1
			for j < len(l) && l[j]&0xC0 == 0x80 {
				j++
			}
			cell := pending + l[i:j]
			pending, i = "", j
			if col < len(cells) {
				cells[col] = cell
			} else {
				cells = append(cells, cell)
			}
			col++
		}
		lines = append(lines, strings.Join(cells, "")+pending)
	}
	return strings.Join(lines, "\n")
}

// progressLineRE is a progress line of --wait or watch once normalised.
// Which of them a watcher prints depends on when it reads the run (a
// step claimed and done between two readings is never seen running), so
// a golden leaves them out; the tests check them (their step counts and
// elapsed times) on the raw output.
var progressLineRE = regexp.MustCompile(`(?m)^\+<dur>  .*\n`)

// ttyNorm normalises a tty or piped transcript as TestGolden's goldens
// are, leaving out the progress lines, naming the colours (<green>…
// <reset>) and writing the server's port and listing cursors as
// placeholders.
func (n *normalizer) ttyNorm(s string) string {
	s = portRE.ReplaceAllStringFunc(s, func(addr string) string {
		if addr == "127.0.0.1:8080" { // the default a message may name
			return addr
		}
		return "127.0.0.1:<port>"
	})
	s = sgrRE.ReplaceAllStringFunc(s, func(code string) string {
		if name := sgrNames[code]; name != "" {
			return name
		}
		return code
	})
	s = cursorRE.ReplaceAllString(s, "--cursor <cursor>")
	s = n.norm(s)
	return progressLineRE.ReplaceAllString(s, "")
}

// The colour codes the CLI writes, named in goldens (a code such as
// \e[0m would otherwise read as a duration).
var (
	sgrRE    = regexp.MustCompile(`\\e\[[0-9;]*m`)
	sgrNames = map[string]string{`\e[0m`: "<reset>", `\e[31m`: "<red>", `\e[32m`: "<green>", `\e[33m`: "<yellow>"}
)

var (
	portRE   = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	cursorRE = regexp.MustCompile(`--cursor \S+`)
)

// stripCodes is out as a terminal shows it, without colours.
func stripCodes(s string) string {
	return regexp.MustCompile(`\\e\[[0-9;?]*[@-~]`).ReplaceAllString(s, "")
}

// TestScreen: the terminal emulation the tty goldens are read with.
func TestScreen(t *testing.T) {
	for in, want := range map[string]string{
		"a\r\nb":                             "a\nb",
		"\r\x1b[K… running  1/2\r\x1b[Kdone": "done",
		"abc\rx":                             "xbc",
		"\x1b[32mok\x1b[0m  x":               `\e[32mok\e[0m  x`,
		"one\x1b[31m":                        `one\e[31m`,
		"é\rx":                               "x",
	} {
		if got := screen(in); got != want {
			t.Errorf("screen(%q) = %q, want %q", in, got, want)
		}
	}
}
