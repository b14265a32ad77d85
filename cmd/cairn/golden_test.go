package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// go test ./cmd/cairn -run TestGolden -update rewrites testdata/*.golden
// from what the CLI prints now; review the diff before committing it.
var update = flag.Bool("update", false, "rewrite the CLI's golden files in testdata/")

// normalizer replaces what differs from one test run to the next (run
// ids, times, durations) with stable placeholders: ids become <run-1>,
// <run-2>… in the order they first appear, so a golden still says which
// run a line is about. Column padding, which follows the real widths,
// is folded to two spaces.
type normalizer struct {
	ids map[string]string
}

var (
	ulidRE     = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	rfc3339RE  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	dateTimeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})?`)
	clockRE    = regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}(\.\d{3})?\b`)
	durRE      = regexp.MustCompile(`-?\b(\d+(\.\d+)?(ns|µs|ms|h|m|s))+\b`)
	padRE      = regexp.MustCompile(`(\S) {2,}`)
	progressRE = regexp.MustCompile(`(?m)^ +\+<dur>`)
	zoneRE     = regexp.MustCompile(`\bUTC([+-]\d{2}:\d{2})?\b`) // the machine's zone, as stamp writes it
)

func (n *normalizer) norm(s string) string {
	s = ulidRE.ReplaceAllStringFunc(s, func(id string) string {
		if n.ids[id] == "" {
			n.ids[id] = fmt.Sprintf("<run-%d>", len(n.ids)+1)
		}
		return n.ids[id]
	})
	s = rfc3339RE.ReplaceAllString(s, "<time>")
	s = zoneRE.ReplaceAllString(s, "<zone>")
	s = dateTimeRE.ReplaceAllString(s, "<time>")
	s = clockRE.ReplaceAllString(s, "<clock>")
	s = durRE.ReplaceAllString(s, "<dur>")
	s = progressRE.ReplaceAllString(s, "+<dur>") // right-aligned elapsed times
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lead := len(l) - len(strings.TrimLeft(l, " "))
		lines = append(lines, l[:lead]+padRE.ReplaceAllString(strings.TrimRight(l[lead:], " "), "$1  "))
	}
	return strings.Join(lines, "\n")
}

// golden compares got with testdata/<name>.golden, or writes it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/cairn -run TestGolden -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the CLI's output (-want +got):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff shows the lines of two texts that differ, numbered.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "%4d - %s\n%4d + %s\n", i+1, wl, i+1, gl)
		}
	}
	return b.String()
}

// transcript is one CLI call as a golden holds it: the command, what it
// printed on stdout, and its error.
func (n *normalizer) transcript(args []string, out string, err error) string {
	s := "$ cairn " + strings.Join(args, " ") + "\n" + out
	if err != nil {
		s += "error: " + err.Error() + "\n"
	}
	return n.norm(s)
}

// run runs the CLI against server and returns its transcript.
func (n *normalizer) run(t *testing.T, server string, args ...string) string {
	t.Helper()
	out, err := cli(t, server, args...)
	return n.transcript(args, out, err)
}

// gate lets a step's attempt end only when the test says so: every
// transition is then seen by the watcher, whatever the machine's speed.
type gate chan struct{}

func (g gate) wait(ctx context.Context) error {
	select {
	case <-g:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitOutput waits until out holds want.
func waitOutput(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, fmt.Sprintf("the output to show %q", want), func() (bool, string) {
		return strings.Contains(out.String(), want), out.String()
	})
}

// TestGolden runs the CLI against a real in-process server (HTTP, a file
// bucket, the reaper) and a real worker, and compares what it prints with
// testdata/*.golden: the live progress of a run that first has no live
// worker, then waits for a worker's claim, an event and a retry; the
// journal followed while it runs; get, list, journal, workers, workflows
// and schedules in each output format; a cancelled run; errors.
func TestGolden(t *testing.T) {
	var offset atomic.Int64 // the engine's clock, ahead or behind
	srv := sdktest.Start(t, sdktest.Options{Engine: engine.Config{
		Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
	}})
	n := &normalizer{ids: map[string]string{}}
	c := testClient(t, srv.URL)

	shout, greet := make(gate), make(gate)
	var greets atomic.Int32
	golden1 := sdk.Workflow("golden", "1").
		Task("shout", sdk.Handle(func(ctx sdk.StepContext, in greetIn) (string, error) {
			if err := shout.wait(ctx); err != nil {
				return "", err
			}
			// Progress, shown by start --wait before the step ends.
			if err := sdk.Progress(ctx, map[string]int{"done": 1, "of": 2}); err != nil {
				return "", err
			}
			if err := shout.wait(ctx); err != nil {
				return "", err
			}
			ctx.SetUsage(sdk.Usage{Model: "m", InputTokens: 3, OutputTokens: 4})
			return strings.ToUpper(in.Name), nil
		})).
		Wait("approve", "approve", sdk.After("shout")).
		Task("greet", sdk.Handle(func(ctx sdk.StepContext, name string) (map[string]string, error) {
			if err := greet.wait(ctx); err != nil {
				return nil, err
			}
			if greets.Add(1) == 1 {
				return nil, sdk.Retryable(errors.New("flaky"))
			}
			return map[string]string{"greeting": "hello " + name}, nil
		}), sdk.After("approve"), sdk.Input("${steps.shout.output}"),
			sdk.Retry(sdk.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Second}))
	gated := sdk.Workflow("gated", "1").Wait("go", "go")
	// A worker that registered the workflows longer ago than the alive
	// window (two refresh periods and the claim slack) and is gone, its
	// record not yet expired: one registration call, no claims (a claim
	// would be seen later).
	offset.Store(int64(-2*engine.WorkerRefreshEvery - 30*time.Minute))
	register(t, srv.URL, "ghost", golden1, gated)
	offset.Store(0)

	// start --wait: no live worker at first, then one.
	var out syncBuffer
	startArgs := []string{"runs", "start", "golden", "--input", `{"name":"ana"}`, "--wait"}
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"--server", srv.URL}, startArgs...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- root.ExecuteContext(ctx) }()
	waitOutput(t, &out, "shout                waiting for a worker")
	id := runIDRE.FindStringSubmatch(out.String())[1]

	// The journal, followed while the run goes on.
	var follow syncBuffer
	froot := newRootCmd()
	froot.SetOut(&follow)
	froot.SetErr(&bytes.Buffer{})
	followArgs := []string{"runs", "journal", id, "--follow"}
	froot.SetArgs(append([]string{"--server", srv.URL}, followArgs...))
	followed := make(chan error, 1)
	go func() { followed <- froot.ExecuteContext(ctx) }()
	waitOutput(t, &follow, "step_ready")

	stop := testutil.ServeWorker(t, sdk.NewWorker(c, sdk.WithName("cli-golden"), sdk.WithLogger(quietLogger())).Register(golden1, gated), 10*time.Second)
	defer stop()
	waitOutput(t, &out, "shout                running  on cli-golden")
	shout <- struct{}{}
	waitOutput(t, &out, `progress {"done":1,"of":2}`)
	shout <- struct{}{}
	waitOutput(t, &out, "approve              waiting for event approve")
	event := n.run(t, srv.URL, "runs", "event", id, "approve", "--payload", `{"by":"ana"}`, "--id", "e1")
	waitOutput(t, &out, "greet                running  on cli-golden")
	greet <- struct{}{}
	waitOutput(t, &out, "greet                retry pending (attempt 2)")
	waitOutput(t, &out, "greet                running (attempt 2)")
	greet <- struct{}{}
	err := <-started
	golden(t, "runs_start_wait", n.transcript(startArgs, out.String(), err))
	golden(t, "runs_event", event)
	err = <-followed
	golden(t, "runs_journal_follow", n.transcript(followArgs, follow.String(), err))

	// The ended run in every format.
	for _, f := range []string{"table", "json", "jsonl"} {
		golden(t, "runs_get_"+f, n.run(t, srv.URL, "runs", "get", id, "-o", f))
		golden(t, "runs_list_"+f, n.run(t, srv.URL, "runs", "list", "--workflow", "golden", "-o", f))
		golden(t, "runs_journal_"+f, n.run(t, srv.URL, "runs", "journal", id, "-o", f))
		golden(t, "workers_"+f, n.run(t, srv.URL, "workers", "-o", f))
		golden(t, "workflows_"+f, n.run(t, srv.URL, "workflows", "-o", f))
		golden(t, "workflow_"+f, n.run(t, srv.URL, "workflows", "golden", "-o", f))
	}

	// The input each attempt of greet was given (its template renders
	// shout's output), the latest and the first.
	golden(t, "runs_input", n.run(t, srv.URL, "runs", "input", id, "greet")+n.run(t, srv.URL, "runs", "input", id, "greet", "--attempt", "1"))

	// A cancelled run says so once, in every view: not "cancelled:
	// cancelled: not needed".
	startGated := []string{"runs", "start", "gated"}
	raw, err := cli(t, srv.URL, startGated...)
	if err != nil {
		t.Fatal(err)
	}
	gid := runIDRE.FindStringSubmatch(raw)[1]
	s := n.transcript(startGated, raw, nil)
	s += n.run(t, srv.URL, "runs", "cancel", gid, "--reason", "not needed")
	s += n.run(t, srv.URL, "runs", "watch", gid)
	s += n.run(t, srv.URL, "runs", "get", gid)
	s += n.run(t, srv.URL, "runs", "list", "--workflow", "gated")
	golden(t, "runs_cancelled", s)

	// A paused run: pausing again changes nothing, it lists as paused, and
	// the resume gives it back to the worker, which the event completes.
	raw, err = cli(t, srv.URL, startGated...)
	if err != nil {
		t.Fatal(err)
	}
	pid := runIDRE.FindStringSubmatch(raw)[1]
	s = n.transcript(startGated, raw, nil)
	s += n.run(t, srv.URL, "runs", "pause", pid)
	s += n.run(t, srv.URL, "runs", "pause", pid)
	s += n.run(t, srv.URL, "runs", "get", pid)
	s += n.run(t, srv.URL, "runs", "list", "--workflow", "gated", "--status", "paused")
	s += n.run(t, srv.URL, "runs", "resume", pid)
	s += n.run(t, srv.URL, "runs", "event", pid, "go")
	s += n.run(t, srv.URL, "runs", "watch", pid)
	s += n.run(t, srv.URL, "runs", "pause", pid)
	golden(t, "runs_paused", s)

	// Schedules.
	s = n.run(t, srv.URL, "schedules", "create", "golden", "0 2 * * *", "--id", "nightly", "--paused", "--input", `{"name":"night"}`)
	for _, f := range []string{"table", "json", "jsonl"} {
		s += n.run(t, srv.URL, "schedules", "list", "-o", f)
		s += n.run(t, srv.URL, "schedules", "get", "nightly", "-o", f)
	}
	golden(t, "schedules", s)

	// Errors: one line, a non-zero exit.
	s = ""
	for _, args := range [][]string{
		{"frobnicate"},
		{"runs", "frobnicate"},
		{"runs", "list", "--bogus"},
		{"runs", "list", "-o", "yaml"},
		{"runs", "list", "--json", "-o", "jsonl"},
		{"runs", "journal", id, "--follow", "-o", "json"},
		{"runs", "get", "NOPE"},
		{"runs", "start", "nope"},
	} {
		s += n.run(t, srv.URL, args...)
	}
	golden(t, "errors", s)
}

// register registers definitions as a worker, with one call of the API.
func register(t *testing.T, server, worker string, defs ...*sdk.WorkflowDef) {
	t.Helper()
	req := cairn.RegisterRequest{WorkerID: worker}
	for _, d := range defs {
		w, err := d.Definition()
		if err != nil {
			t.Fatal(err)
		}
		req.Workflows = append(req.Workflows, w)
	}
	body, _ := json.Marshal(req)
	resp, err := http.Post(server+"/v1/api/workers/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register %s: %s", worker, resp.Status)
	}
}
