package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// Each test below runs the command line as a process on a terminal and
// piped (tty_test.go), checks what it printed, and compares it with
// testdata/tty_<what>_<tty|piped>.golden.

// session runs commands in one mode against one server and keeps their
// transcripts, normalised with one normalizer (a run keeps its <run-N>).
type session struct {
	t      *testing.T
	m      mode
	server string
	n      *normalizer
	text   strings.Builder
}

func newSession(t *testing.T, m mode, server string) *session {
	return &session{t: t, m: m, server: server, n: &normalizer{ids: map[string]string{}}}
}

// run runs cairn --server <server> args to its end, adds its transcript
// and returns what it wrote (as the screen shows it on a terminal, codes
// of colours as \e[…m) and its exit status.
func (s *session) run(args ...string) (string, int) {
	s.t.Helper()
	p := startCLI(s.t, s.m, append([]string{"--server", s.server}, args...)...)
	code := p.wait()
	s.add(p, code)
	out := p.out.String()
	if s.m.tty {
		out = screen(out)
	} else {
		out += p.errOut.String()
	}
	return out, code
}

func (s *session) add(p *proc, code int) { s.text.WriteString(s.n.ttyNorm(p.transcript(code))) }

// golden compares the transcripts with testdata/tty_<name>_<mode>.golden.
func (s *session) golden(name string) {
	s.t.Helper()
	golden(s.t, "tty_"+name+"_"+s.m.name, s.text.String())
}

// colours checks that a terminal got colours and a pipe none.
func (s *session) colours(out string) {
	s.t.Helper()
	if has := strings.Contains(out, `\e[`) || strings.Contains(out, "\x1b"); has != s.m.tty {
		s.t.Errorf("%s: colour codes %t, want %t:\n%q", s.m.name, has, s.m.tty, out)
	}
}

// eachMode runs f in a subtest per mode.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

// (a) Colour codes take no width: on a terminal, runs list colours its
// statuses and its columns line up once the codes are stripped; piped,
// it has no colours.
func TestTTYRunsListColoursKeepColumns(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv, _ := startServed(t)
		mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"ana"}`, "--wait")
		cli(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"boom"}`, "--wait")
		id := runIDRE.FindStringSubmatch(mustCLI(t, srv.URL, "runs", "start", "gate"))[1]
		mustCLI(t, srv.URL, "runs", "cancel", id, "--reason", "changed my mind")

		s := newSession(t, m, srv.URL)
		out, code := s.run("runs", "list")
		if code != 0 {
			t.Fatalf("runs list: exit %d\n%s", code, out)
		}
		s.colours(out)
		checkAligned(t, stripCodes(out), "WORKFLOW", "STATUS", "STEPS", "STARTED", "TOOK", "ERROR")
		s.golden("runs_list")
	})
}

// (b) A run that maps items, fails and compensates counts its steps the
// same way in --wait (its progress lines and its end), runs get and runs
// list: the declared steps, 1 of 2 done.
func TestTTYStepTotalsAgree(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv, c := serving(t, sdktest.Options{}, nil, sagaWorkflow())

		s := newSession(t, m, srv.URL)
		wait, code := s.run("runs", "start", "saga", "--input", "[1,2,3]", "--wait")
		if code != 1 {
			t.Fatalf("the run did not fail: exit %d\n%s", code, wait)
		}
		id := runIDRE.FindStringSubmatch(wait)[1]
		testutil.Eventually(t, 20*time.Second, "the compensation to end", func() (bool, string) {
			r, err := c.Get(t.Context(), id)
			return err == nil && r.Compensation != nil && r.Compensation.Status != "running", wait
		})
		get, _ := s.run("runs", "get", id)
		list, _ := s.run("runs", "list", "--workflow", "saga")
		counts := regexp.MustCompile(`\b\d+/\d+\b`)
		for view, text := range map[string]string{"--wait": wait, "get": get, "list": list} {
			for _, c := range counts.FindAllString(stripCodes(text), -1) {
				if c != "1/2" && !(view == "--wait" && c == "0/2") {
					t.Errorf("%s counts %s, want 1/2 (or 0/2 in progress before the map completed):\n%s", view, c, text)
				}
			}
		}
		if !strings.Contains(wait, "(1/2 steps)") || !strings.Contains(get, "(1/2 steps)") || !strings.Contains(stripCodes(list), "1/2") {
			t.Errorf("a view lacks 1/2:\n%s\n%s\n%s", wait, get, list)
		}
		s.colours(list)
		s.golden("step_totals")
	})
}

// (c) --limit counts the runs listed, not the runs read: 2 of the 4
// matches behind 40 newer runs that do not match, and the next cursor.
func TestTTYLimitCountsResults(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv := sdktest.Start(t, sdktest.Options{})
		c := testClient(t, srv.URL)
		register(t, srv.URL, "ghost", sdk.Workflow("approval", "1").Wait("ok", "ok"), sdk.Workflow("other", "1").Wait("ok", "ok"))
		startRuns(t, c, "approval", 4)
		startRuns(t, c, "other", 40)

		s := newSession(t, m, srv.URL)
		out, code := s.run("runs", "list", "--workflow", "approval", "--limit", "2")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if n := strings.Count(out, "approval@1"); n != 2 || !strings.Contains(out, "more: cairn runs list --cursor") {
			t.Errorf("--limit 2 listed %d runs of approval, want 2 and the next cursor:\n%s", n, out)
		}
		out, _ = s.run("runs", "list", "--workflow", "approval", "--limit", "10")
		if n := strings.Count(out, "approval@1"); n != 4 || strings.Contains(out, "more:") {
			t.Errorf("--limit 10 listed %d runs of approval, want all 4 and no cursor:\n%s", n, out)
		}
		s.golden("limit")
	})
}

// (d) A cancelled run's error says "cancelled: not needed" once in every
// view.
func TestTTYCancelledErrorReadsOnce(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv := sdktest.Start(t, sdktest.Options{})
		register(t, srv.URL, "ghost", sdk.Workflow("gated", "1").Wait("go", "go"))
		s := newSession(t, m, srv.URL)
		out, _ := s.run("runs", "start", "gated")
		id := runIDRE.FindStringSubmatch(out)[1]
		for _, args := range [][]string{
			{"runs", "cancel", id, "--reason", "not needed"},
			{"runs", "watch", id},
			{"runs", "get", id},
			{"runs", "list", "--workflow", "gated"},
		} {
			out, _ := s.run(args...)
			plain := stripCodes(out)
			if strings.Contains(plain, "cancelled: cancelled") {
				t.Errorf("cairn %s doubles the cause:\n%s", strings.Join(args, " "), out)
			}
			if args[1] != "cancel" && strings.Count(plain, "cancelled: not needed") != 1 {
				t.Errorf("cairn %s: want \"cancelled: not needed\" once:\n%s", strings.Join(args, " "), out)
			}
		}
		s.golden("cancelled")
	})
}

// (e) The elapsed times --wait prints never go back, with the server's
// clock ten minutes ahead of the client's: each progress line's, and on
// a terminal the live status line's.
func TestTTYWaitElapsedMonotonic(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv := skewedSteps(t, 10*time.Minute)

		s := newSession(t, m, srv.URL)
		p := startCLI(t, m, "--server", srv.URL, "runs", "start", "steps", "--input", `"x"`, "--wait")
		code := p.wait()
		s.add(p, code)
		raw := p.out.String()
		if code != 0 || !strings.Contains(raw, "(2/2 steps)") {
			t.Fatalf("exit %d:\n%q", code, raw)
		}
		var seen []time.Duration
		for _, mm := range elapsedRE.FindAllStringSubmatch(raw, -1) {
			d, err := time.ParseDuration(mm[1] + mm[2])
			if err != nil {
				t.Fatalf("elapsed %q: %v\n%q", mm[1]+mm[2], err, raw)
			}
			if d < 0 || d > time.Minute {
				t.Errorf("elapsed %s is not the run's\n%q", d, raw)
			}
			if n := len(seen); n > 0 && d < seen[n-1] {
				t.Errorf("elapsed went back from %s to %s\n%q", seen[n-1], d, raw)
			}
			seen = append(seen, d)
		}
		if len(seen) < 2 {
			t.Errorf("too few elapsed times (%v) in:\n%q", seen, raw)
		}
		if m.tty && !strings.Contains(raw, "current: ") {
			t.Errorf("no live status line on a terminal:\n%q", raw)
		}
		s.golden("wait_elapsed")
	})
}

// (f) --server takes host:port; a value that is no address says what to
// type, after one "cairn: ".
func TestTTYServerHostPort(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv := sdktest.Start(t, sdktest.Options{})
		s := newSession(t, m, strings.TrimPrefix(srv.URL, "http://"))
		if out, code := s.run("workers"); code != 0 || !strings.Contains(out, "no workers registered") {
			t.Errorf("--server host:port: exit %d\n%s", code, out)
		}
		for _, bad := range []string{"localhost:abc", "ftp://127.0.0.1:8080", "http://"} {
			s.server = bad
			out, code := s.run("workers")
			if code != 1 || strings.Count(out, "cairn:") != 1 || !strings.Contains(out, "type a URL or host:port, such as --server http://127.0.0.1:8080 or --server 127.0.0.1:8080") {
				t.Errorf("--server %s: exit %d\n%s", bad, code, out)
			}
		}
		s.golden("server")
	})
}

// (g) Ctrl-C on runs start --wait exits 130 and says the run goes on: on
// a terminal the key itself (the terminal sends SIGINT), piped a SIGINT.
func TestTTYCtrlCExits130(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv := slowServer(t)
		s := newSession(t, m, srv.URL)
		p := startCLI(t, m, "--server", srv.URL, "runs", "start", "slow", "--wait")
		p.waitFor("running")
		p.interrupt()
		code := p.wait()
		s.add(p, code)
		out := p.out.String() + p.errOut.String()
		if code != 130 || strings.Count(out, "cairn:") != 1 || !strings.Contains(out, "continues on the server") {
			t.Errorf("Ctrl-C: exit %d, want 130 and one message:\n%q", code, out)
		}
		s.golden("ctrl_c")
	})
}

// (h) Completion offers workflow names, run ids and schedule ids from
// the server.
func TestTTYCompletion(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		srv, _ := startServed(t)
		run := runIDRE.FindStringSubmatch(mustCLI(t, srv.URL, "runs", "start", "gate"))[1]
		mustCLI(t, srv.URL, "schedules", "create", "greet", "0 2 * * *", "--id", "nightly", "--paused")
		s := newSession(t, m, srv.URL)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"runs", "start", ""}, "gate\ngreet\n:4"},
			{[]string{"runs", "get", ""}, run + "\n:4"},
			{[]string{"schedules", "pause", ""}, "nightly\n:4"},
		} {
			out, code := s.run(append([]string{"__complete"}, tc.args...)...)
			var words []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if w := strings.SplitN(l, "\t", 2)[0]; !strings.HasPrefix(w, "Completion ended") {
					words = append(words, w)
				}
			}
			if got := strings.Join(words, "\n"); code != 0 || got != tc.want {
				t.Errorf("cairn __complete %s: exit %d, %q, want %q", strings.Join(tc.args, " "), code, got, tc.want)
			}
		}
		s.golden("completion")
	})
}

// idPatternRE is a row of the table of id patterns in docs/CLI.md.
var idPatternRE = regexp.MustCompile("(?m)^\\| (run|batch|schedule(?: \\(`--id`\\)| \\(generated\\))?) \\| `([^`]+)` \\| `([^`]+)` \\|$")

// (i) The ids the CLI prints match the patterns docs/CLI.md gives for
// their kinds: a run's, a batch's, a schedule's named and generated.
func TestTTYIdsMatchTheirDocumentedPatterns(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	patterns := map[string]*regexp.Regexp{}
	for _, row := range idPatternRE.FindAllStringSubmatch(string(doc), -1) {
		re := regexp.MustCompile(row[2])
		if !re.MatchString(row[3]) {
			t.Errorf("docs/CLI.md: the example %s of a %s id does not match %s", row[3], row[1], row[2])
		}
		patterns[row[1]] = re
	}
	kinds := []string{"run", "batch", "schedule (`--id`)", "schedule (generated)"}
	for _, k := range kinds {
		if patterns[k] == nil {
			t.Fatalf("docs/CLI.md has no pattern for %s ids (found %v)", k, patterns)
		}
	}
	lowerULID := regexp.MustCompile(`\b[0-9a-hjkmnp-tv-z]{26}\b`)
	eachMode(t, func(t *testing.T, m mode) {
		srv, _ := startServed(t)
		s := newSession(t, m, srv.URL)
		out, _ := s.run("runs", "start", "gate")
		run := runIDRE.FindStringSubmatch(out)[1]
		out, _ = s.run("batches", "cancel", "--workflow", "gate", "--status", "running", "--reason", "ids", "--wait")
		batch := strings.TrimSuffix(strings.Fields(out)[1], ":")
		s.run("schedules", "create", "greet", "0 2 * * *", "--id", "nightly", "--paused")
		out, _ = s.run("schedules", "create", "greet", "0 3 * * *", "--paused")
		generated := lowerULID.FindString(out)
		for _, id := range []struct{ kind, id string }{
			{"run", run}, {"batch", batch}, {"schedule (`--id`)", "nightly"}, {"schedule (generated)", generated},
		} {
			if !patterns[id.kind].MatchString(id.id) {
				t.Errorf("a %s id %q does not match its documented pattern %s", id.kind, id.id, patterns[id.kind])
			}
		}
		if !strings.Contains(out, generated) || generated == "" {
			t.Errorf("no generated schedule id in:\n%s", out)
		}
		text := lowerULID.ReplaceAllString(s.text.String(), "<lower-case-ulid>")
		s.text.Reset()
		s.text.WriteString(text)
		s.golden("ids")
	})
}
