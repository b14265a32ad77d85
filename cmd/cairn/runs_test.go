package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/sdk"
	"github.com/cairn-dev/cairn/sdk/sdktest"
)

// cli runs the cairn command line against server and returns its stdout.
func cli(t *testing.T, server string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"--server", server}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

func mustCLI(t *testing.T, server string, args ...string) string {
	t.Helper()
	out, err := cli(t, server, args...)
	if err != nil {
		t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// testClient is a client of server whose idle connections close when the
// test ends.
func testClient(t *testing.T, server string) *sdk.Client {
	t.Helper()
	c, err := sdk.NewClient(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// serving starts a server with opts and a worker serving defs on it until
// the test ends, and returns the server and the client the worker serves
// with. The worker logs nothing; wopts are its other options.
func serving(t *testing.T, opts sdktest.Options, wopts []sdk.WorkerOption, defs ...*sdk.WorkflowDef) (*sdktest.Server, *sdk.Client) {
	t.Helper()
	srv := sdktest.Start(t, opts)
	c := testClient(t, srv.URL)
	w := sdk.NewWorker(c, append([]sdk.WorkerOption{sdk.WithLogger(quietLogger())}, wopts...)...).Register(defs...)
	testutil.ServeWorker(t, w, 10*time.Second)
	return srv, c
}

// startRuns starts n runs of workflow wf with no input and returns their
// ids, in the order started.
func startRuns(t *testing.T, c *sdk.Client, wf string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		r, err := c.Start(context.Background(), wf, sdk.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

type greetIn struct {
	Name string `json:"name"`
}

// startServed starts a server and a worker serving workflows greet and
// gate on it until the test ends, and returns the server and the client
// the worker serves with.
func startServed(t *testing.T) (*sdktest.Server, *sdk.Client) {
	t.Helper()
	wf := sdk.Workflow("greet", "1").
		Task("shout", sdk.Handle(func(ctx sdk.StepContext, in greetIn) (string, error) {
			ctx.SetUsage(sdk.Usage{Model: "m", InputTokens: 3, OutputTokens: 4})
			return strings.ToUpper(in.Name), nil
		})).
		Task("greet", sdk.Handle(func(ctx sdk.StepContext, name string) (map[string]string, error) {
			if name == "BOOM" {
				return nil, errors.New("cannot greet BOOM")
			}
			return map[string]string{"greeting": "hello " + name}, nil
		}), sdk.After("shout"), sdk.Input("${steps.shout.output}"))
	gate := sdk.Workflow("gate", "1").
		Wait("go", "go").
		Task("after", sdk.Handle(func(ctx sdk.StepContext, in json.RawMessage) (json.RawMessage, error) { return in, nil }),
			sdk.After("go"), sdk.Input("${steps.go.output}"))
	return serving(t, sdktest.Options{}, []sdk.WorkerOption{sdk.WithName("cli-worker")}, wf, gate)
}

var runIDRE = regexp.MustCompile(`run ([0-9A-Z]{26})`)

func TestRunsCommands(t *testing.T) {
	srv, _ := startServed(t)

	// start --wait: progress lines, the end, usage, the output.
	out := mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"ana"}`, "--wait")
	t.Logf("start --wait:\n%s", out)
	// Which intermediate states a watcher sees depends on timing (a long
	// poll answers with the newest state, and a step claimed and done
	// between two readings is never seen running); the last always shows.
	// TestGolden gates every attempt and checks each transition.
	for _, want := range []string{"(greet@1)", "shout", "greet                completed",
		"completed in", "(2/2 steps)", "usage: m, 3 in / 4 out tokens", `"greeting": "hello ANA"`} {
		if !strings.Contains(out, want) {
			t.Errorf("start --wait output lacks %q", want)
		}
	}
	id := runIDRE.FindStringSubmatch(out)[1]

	// --json for scripts.
	out = mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"bo"}`, "--wait", "--json")
	var r sdk.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Status != sdk.RunCompleted || compact(r.Output) != `{"greeting":"hello BO"}` {
		t.Fatalf("--wait --json: %v\n%s", err, out)
	}
	out = mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"cy"}`, "--idempotency-key", "k1", "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Existed {
		t.Fatalf("start --json: %v\n%s", err, out)
	}
	out = mustCLI(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"cy"}`, "--idempotency-key", "k1")
	if !strings.HasPrefix(out, "found (idempotency key) run "+r.ID) {
		t.Fatalf("second start: %s", out)
	}

	// A failing run: progress shows the failure, the command fails with
	// one line.
	out, err := cli(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"boom"}`, "--wait")
	if err == nil || !strings.Contains(err.Error(), "failed: step greet: fatal: cannot greet BOOM") || !strings.Contains(out, "greet                failed  fatal: cannot greet BOOM") {
		t.Fatalf("failing run: %v\n%s", err, out)
	}

	// get, list, journal, watch of an ended run.
	out = mustCLI(t, srv.URL, "runs", "get", id)
	for _, want := range []string{"workflow  greet@1", "status    completed (2/2 steps)", "shout", `"greeting": "hello ANA"`} {
		if !strings.Contains(out, want) {
			t.Errorf("get lacks %q:\n%s", want, out)
		}
	}
	out = mustCLI(t, srv.URL, "runs", "list", "--workflow", "greet", "--all")
	if strings.Count(out, "greet@1") != 4 || !strings.Contains(out, "failed") {
		t.Errorf("list:\n%s", out)
	}
	out = mustCLI(t, srv.URL, "runs", "list", "--status", "failed", "--json", "--all")
	var page struct{ Runs []sdk.RunSummary }
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Runs) != 1 {
		t.Errorf("list --json: %v\n%s", err, out)
	}
	out = mustCLI(t, srv.URL, "runs", "journal", id)
	if !strings.Contains(out, "run_started") || !strings.Contains(out, "step_completed") || !strings.Contains(out, "cli-worker") {
		t.Errorf("journal:\n%s", out)
	}
	out = mustCLI(t, srv.URL, "runs", "watch", id)
	if !strings.Contains(out, "run "+id+" completed") {
		t.Errorf("watch:\n%s", out)
	}

	// A waiting run: event resumes it; cancel ends another.
	out = mustCLI(t, srv.URL, "runs", "start", "gate")
	gate := runIDRE.FindStringSubmatch(out)[1]
	waitFor(t, srv.URL, gate, "waiting for an event")
	out = mustCLI(t, srv.URL, "runs", "event", gate, "go", "--payload", `{"ok":true}`, "--id", "e1")
	if !strings.Contains(out, "resumed go") {
		t.Errorf("event: %s", out)
	}
	out = mustCLI(t, srv.URL, "runs", "event", gate, "go", "--id", "e1")
	if !strings.Contains(out, "duplicate") {
		t.Errorf("duplicate event: %s", out)
	}
	out = mustCLI(t, srv.URL, "runs", "watch", gate, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || compact(r.Output) != `{"ok":true}` {
		t.Errorf("watch --json: %v\n%s", err, out)
	}
	out = mustCLI(t, srv.URL, "runs", "start", "gate")
	other := runIDRE.FindStringSubmatch(out)[1]
	out = mustCLI(t, srv.URL, "runs", "cancel", other, "--reason", "not needed")
	if !strings.HasPrefix(out, "cancelled run "+other) {
		t.Errorf("cancel: %s", out)
	}

	// Workers and workflows.
	out = mustCLI(t, srv.URL, "workers")
	if !strings.Contains(out, "cli-worker") || !strings.Contains(out, "gate@1, greet@1") && !strings.Contains(out, "greet@1, gate@1") {
		t.Errorf("workers:\n%s", out)
	}
	out = mustCLI(t, srv.URL, "workflows")
	if !strings.Contains(out, "greet") || !strings.Contains(out, "gate") {
		t.Errorf("workflows:\n%s", out)
	}
	out = mustCLI(t, srv.URL, "workflows", "greet", "-o", "json")
	if !strings.Contains(out, `"after": [`) || !strings.Contains(out, `"name": "greet"`) {
		t.Errorf("workflows greet -o json:\n%s", out)
	}
	out = mustCLI(t, srv.URL, "workflows", "greet")
	if !strings.Contains(out, "workflow  greet@1") || !regexp.MustCompile(`greet\s+task\s+shout`).MatchString(out) {
		t.Errorf("workflows greet:\n%s", out)
	}
}

// get shows who holds a running step: the holder the API sends.
func TestRunsGetShowsHolder(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	c := testClient(t, srv.URL)
	release := make(chan struct{})
	wf := sdk.Workflow("hold", "1").Task("slow", sdk.Handle(func(ctx sdk.StepContext, in json.RawMessage) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return in, nil
	}))
	w := sdk.NewWorker(c, sdk.WithName("holder-worker"), sdk.WithLogger(slog.New(slog.DiscardHandler))).Register(wf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	t.Cleanup(func() {
		close(release)
		cancel()
		<-done
	})
	<-w.Ready()
	out := mustCLI(t, srv.URL, "runs", "start", "hold", "--input", `1`)
	id := runIDRE.FindStringSubmatch(out)[1]
	testutil.Eventually(t, 10*time.Second, "runs get to show the step's holder", func() (bool, string) {
		out = mustCLI(t, srv.URL, "runs", "get", id)
		return strings.Contains(out, "on holder-worker since"), out
	})
	out = mustCLI(t, srv.URL, "runs", "get", id, "--json")
	var r sdk.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Step("slow").Holder == nil || r.Step("slow").Holder.Worker != "holder-worker" {
		t.Fatalf("get --json lacks the holder: %v\n%s", err, out)
	}
}

func waitFor(t *testing.T, server, id, state string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("run %s %s", id, state), func() (bool, string) {
		out := mustCLI(t, server, "runs", "get", id)
		return strings.Contains(out, "waiting"), out
	})
}

// API errors are one clear line; bad flags are refused before any call.
func TestRunsErrors(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	_, err := cli(t, srv.URL, "runs", "get", "NOPE")
	if err == nil || err.Error() != `404 Not Found: run "NOPE" not found` {
		t.Fatalf("get unknown: %v", err)
	}
	_, err = cli(t, srv.URL, "runs", "start", "nope")
	if err == nil || err.Error() != `404 Not Found: workflow "nope" not found` {
		t.Fatalf("start unknown: %v", err)
	}
	_, err = cli(t, srv.URL, "runs", "start", "nope", "--input", "{bad")
	if err == nil || !strings.Contains(err.Error(), "--input is not valid JSON") {
		t.Fatalf("bad input: %v", err)
	}
	_, err = cli(t, srv.URL, "runs", "list", "--status", "weird")
	if err == nil || !strings.HasPrefix(err.Error(), "422 Unprocessable Entity: validation failed") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bad status: %v", err)
	}
	_, err = cli(t, "http://127.0.0.1:1", "workers")
	if err == nil || !strings.Contains(err.Error(), "cannot reach cairn at http://127.0.0.1:1") {
		t.Fatalf("unreachable: %v", err)
	}
	out := mustCLI(t, srv.URL, "workers")
	if !strings.Contains(out, "no workers registered") {
		t.Fatalf("workers: %s", out)
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// cairn runs rerun: a failed run is rerun from a step, and the output says
// which run it reran and how many steps it reused.
func TestRunsRerun(t *testing.T) {
	srv, _ := startServed(t)
	out, err := cli(t, srv.URL, "runs", "start", "greet", "--input", `{"name":"boom"}`, "--wait")
	if err == nil {
		t.Fatalf("a failing run exited 0:\n%s", out)
	}
	m := runIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in %q", out)
	}
	old := m[1]
	out = mustCLI(t, srv.URL, "runs", "rerun", old)
	if !strings.Contains(out, "rerun of "+old) || !strings.Contains(out, "1/2 steps reused") {
		t.Fatalf("rerun said %q", out)
	}
	// From the first step, nothing is reused: it fails the same way.
	out, err = cli(t, srv.URL, "runs", "rerun", old, "--from", "shout", "--wait")
	if err == nil || !strings.Contains(out, "rerun of "+old) || !strings.Contains(out, "cannot greet BOOM") {
		t.Fatalf("rerun --from shout --wait: %v\n%s", err, out)
	}
	if _, err := cli(t, srv.URL, "runs", "rerun", old, "--from", "nope"); err == nil || !strings.Contains(err.Error(), "from_step") {
		t.Fatalf("unknown step: %v", err)
	}
}

// --limit counts the runs listed, not the runs read: a filter whose
// matches are older than the first pages the server examines still lists
// --limit of them, the CLI following the cursor of short or empty pages.
func TestRunsListLimitCountsMatches(t *testing.T) {
	srv := sdktest.Start(t, sdktest.Options{})
	c := testClient(t, srv.URL)
	register(t, srv.URL, "ghost", sdk.Workflow("approval", "1").Wait("ok", "ok"), sdk.Workflow("other", "1").Wait("ok", "ok"))
	approvals := startRuns(t, c, "approval", 4)
	// More newer runs than one filtered page examines (16 reads of 2).
	startRuns(t, c, "other", 40)
	// Runs started in the same millisecond list in any order.
	isApproval := map[string]bool{}
	for _, id := range approvals {
		isApproval[id] = true
	}
	for _, tc := range []struct {
		limit string
		want  int
		more  bool
	}{
		{"2", 2, true},
		{"10", 4, false},
	} {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"--server", srv.URL, "runs", "list", "--workflow", "approval", "--limit", tc.limit})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
			if id := strings.Fields(l)[0]; isApproval[id] {
				got = append(got, id)
			}
		}
		if len(got) != tc.want || strings.Count(out.String(), "\n") != tc.want+1 {
			t.Errorf("runs list --workflow approval --limit %s listed %d approval runs, want %d:\n%s", tc.limit, len(got), tc.want, out.String())
		}
		if more := strings.Contains(errOut.String(), "more: cairn runs list --cursor"); more != tc.more {
			t.Errorf("--limit %s: the next cursor shown: %t, want %t (%s)", tc.limit, more, tc.more, errOut.String())
		}
	}
}
