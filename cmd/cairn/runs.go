package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

func newRunsCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Start, watch, list, signal, pause and cancel runs",
		Long: `runs talks to a cairn server (--server, default $CAIRN_SERVER or
http://127.0.0.1:8080) with the key in --key or $CAIRN_KEY.

Steps done/total, in every view (list, get, watch, --wait, cancel, -o json
too), counts the steps the workflow declares: a map step is one step
however many items it maps, the compensation (on_failure) steps of a
failed run are not counted, and done is completed or skipped.

Run ids are ULIDs with inverted time: they sort newest first, so a listing
of the bucket reads the newest runs first. (Batch ids are plain ULIDs,
schedule ids lower case: see docs/CLI.md.)`,
	}
	cmd.AddCommand(newRunsStartCmd(cf), newRunsGetCmd(cf), newRunsListCmd(cf), newRunsJournalCmd(cf),
		newRunsCancelCmd(cf), newRunsPauseCmd(cf, false), newRunsPauseCmd(cf, true), newRunsResumeStepCmd(cf), newRunsEventCmd(cf), newRunsUpdateCmd(cf), newRunsWatchCmd(cf), newRunsRerunCmd(cf), newRunsDeleteCmd(cf), newRunsInputCmd(cf))
	return cmd
}

func newRunsStartCmd(cf *clientFlags) *cobra.Command {
	var (
		input, version, ikey, correlation string
		deadline                          time.Duration
		wait, asJSON                      bool
		attrs                             []string
	)
	cmd := &cobra.Command{
		Use:   "start <workflow>",
		Short: "Start a run of a workflow",
		Example: `  cairn runs start triage --input '{"subject":"Refund","body":"I was charged twice","customer":"ana@example.com"}' --wait
  cairn runs start triage --input @ticket.json --idempotency-key ticket-1234
  cairn runs start report --version 2 --deadline 1h --json
  cairn runs start billing --attr customer=acme --attr amount=120.5`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			o := sdk.StartOptions{Version: version, IdempotencyKey: ikey, Correlation: correlation, Timeout: deadline}
			var err error
			if o.Attributes, err = attributeArgs(attrs); err != nil {
				return err
			}
			if o.Input, err = optionalJSONArg(cmd, "input", input); err != nil {
				return err
			}
			r, err := c.Start(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			verb := "started"
			if r.Existed {
				verb = "found (idempotency key)"
			}
			return startedRun(cmd, c, cf.pl, r, wait, asJSON,
				fmt.Sprintf("%s run %s (%s@%s)", verb, r.ID, r.Workflow, r.Version),
				fmt.Sprintf("run %s (%s@%s)", r.ID, r.Workflow, r.Version))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "run input: JSON, @file, or - for stdin")
	f.StringVar(&version, "version", "", "workflow version (default: the newest registered)")
	f.StringVar(&ikey, "idempotency-key", "", "starting again with this key returns the first run")
	f.StringVar(&correlation, "correlation", "", "free correlation id (run.correlation in templates)")
	f.StringArrayVar(&attrs, "attr", nil, "a search attribute, name=value (repeat for more): true/false a boolean, a number a number, an RFC 3339 time a time, else a string")
	f.DurationVar(&deadline, "deadline", 0, "time the run out after this long (default: the workflow's deadline)")
	f.BoolVar(&wait, "wait", false, "show progress until the run ends, then its output")
	f.BoolVar(&asJSON, "json", false, "print the run as JSON (with --wait: once it ended)")
	return cmd
}

func newRunsWatchCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "watch <run>",
		Short: "Show a run's progress until it ends, then its output",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			return watch(cmd.Context(), c, cf.pl, args[0], cmd.OutOrStdout(), asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print only the ended run, as JSON")
	return cmd
}

// startedRun prints a run just started (or rerun). Without wait it says
// so in started, and on stderr how to watch it; with wait it prints header
// and then watches the run to its end. asJSON prints the run as JSON
// instead (with wait, once it ended).
func startedRun(cmd *cobra.Command, c *sdk.Client, pl *payloads, r *sdk.Run, wait, asJSON bool, started, header string) error {
	out := cmd.OutOrStdout()
	if !wait {
		if asJSON {
			return printPayloadJSON(out, pl, r)
		}
		fmt.Fprintln(out, started)
		fmt.Fprintf(cmd.ErrOrStderr(), "watch it: cairn runs watch %s\n", r.ID)
		return nil
	}
	if !asJSON {
		fmt.Fprintln(out, header)
	}
	return watch(cmd.Context(), c, pl, r.ID, out, asJSON)
}

// watch follows a run to its end. It prints each step's transitions as
// they happen (and, on a terminal, a live status line), then the output;
// a run that did not complete is returned as an error.
func watch(ctx context.Context, c *sdk.Client, pl *payloads, id string, out io.Writer, asJSON bool) error {
	var p *progress
	streamed := func() {}
	if !asJSON {
		p = newProgress(out, isTerminal(out))
		defer p.stop()
		streamed = p.followProgress(ctx, c, id) // streamwatch.go
	}
	_, err := followRun(ctx, c, id, func(rp *sdk.RunProgress, _ bool) error {
		if p != nil {
			p.update(sdk.ProgressRun(rp), !rp.HoldersTruncated)
		}
		return nil
	})
	streamed()
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C stops the watching, not the run.
			if p != nil {
				p.stop()
			}
			return fmt.Errorf("stopped watching; run %s continues on the server. Follow it with: cairn runs watch %s (cancel it with: cairn runs cancel %s)", id, id, id)
		}
		return err
	}
	// The whole run once it ended: outputs, usage, the errors.
	r, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printPayloadJSON(out, pl, r); err != nil {
			return err
		}
		return runErr(r)
	}
	p.update(r, true)
	p.stop()
	took := ""
	if r.EndedAt != nil {
		took = " in " + shortDuration(r.EndedAt.Sub(r.CreatedAt))
	}
	fmt.Fprintf(out, "run %s %s%s (%d/%d steps)\n", r.ID, paintStatus(string(r.Status), colorOK(out, os.Getenv)), took, r.StepsDone, r.StepsTotal)
	if !r.Usage.IsZero() {
		fmt.Fprintf(out, "usage: %s\n", r.Usage.String())
	}
	if r.Status == sdk.RunCompleted {
		fmt.Fprintf(out, "output:\n%s\n", pl.text(r.Output))
	}
	return runErr(r)
}

// progress prints a run's step transitions.
type progress struct {
	out    io.Writer
	tty    bool
	clock  elapsedClock
	steps  map[string]string // step id → last printed state
	mu     sync.Mutex        // shared with the ticker
	last   *sdk.Run
	ticker *time.Ticker
	done   chan struct{}
	line   bool // a status line is on screen
	// noWorker: the last reading said no live worker serves the run.
	noWorker bool
	// unheld is when each step was first seen waiting for a worker: a
	// step a live worker claims within workerGrace is not shown waiting.
	unheld map[string]time.Time
}

// workerGrace is how long a ready step may wait for a live worker's claim
// before the progress says it waits for one (a claim takes milliseconds;
// showing every step as waiting first would only flicker).
var workerGrace = time.Second

func newProgress(out io.Writer, tty bool) *progress {
	p := &progress{out: out, tty: tty, steps: map[string]string{}, unheld: map[string]time.Time{}, done: make(chan struct{})}
	if tty {
		p.ticker = time.NewTicker(200 * time.Millisecond)
		go func() {
			for {
				select {
				case <-p.done:
					return
				case <-p.ticker.C:
					p.lock()
					p.statusLine()
					p.unlock()
				}
			}
		}()
	}
	return p
}

func (p *progress) lock()   { p.mu.Lock() }
func (p *progress) unlock() { p.mu.Unlock() }

func (p *progress) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
		close(p.done)
	}
	if p.ticker != nil {
		p.ticker.Stop()
	}
	p.lock()
	p.clearLine()
	p.unlock()
}

// elapsedClock says how long a run has been going, on one clock: the
// server's times of a reading (its last change, or its end, less its
// creation) advanced by the client's monotonic clock since the reading
// came, never going back. The client's wall clock, which may be minutes
// off the server's, is never mixed with the server's times.
type elapsedClock struct {
	updated time.Time     // the reading's UpdatedAt
	base    time.Duration // its elapsed time by the server's times
	at      time.Time     // when it came (monotonic)
	shown   time.Duration // the most elapsed time shown
}

// observe takes a reading of the run: a new one (a later change) sets
// the clock to the server's elapsed time at that change.
func (c *elapsedClock) observe(r *sdk.Run) {
	if !c.at.IsZero() && r.UpdatedAt.Equal(c.updated) {
		return
	}
	end := r.UpdatedAt
	if r.EndedAt != nil {
		end = *r.EndedAt
	}
	c.updated, c.base, c.at = r.UpdatedAt, 0, time.Now()
	if !r.CreatedAt.IsZero() && end.After(r.CreatedAt) {
		c.base = end.Sub(r.CreatedAt)
	}
}

// serverNow estimates the server's time: the reading's last change
// advanced by the client's monotonic clock since it came (zero before a
// reading).
func (c *elapsedClock) serverNow() time.Time {
	if c.at.IsZero() {
		return time.Time{}
	}
	return c.updated.Add(time.Since(c.at))
}

// elapsed is the run's elapsed time now, never less than one shown before.
func (c *elapsedClock) elapsed() time.Duration {
	if c.at.IsZero() {
		return c.shown
	}
	c.shown = max(c.shown, c.base+time.Since(c.at))
	return c.shown
}

func (p *progress) elapsed() time.Duration { return p.clock.elapsed() }

// update prints the steps whose state changed since the last reading;
// holdersKnown says a ready step without a holder is held by nobody.
func (p *progress) update(r *sdk.Run, holdersKnown bool) {
	p.lock()
	defer p.unlock()
	p.clearLine()
	p.last = r
	p.clock.observe(r)
	if r.NoLiveWorker != p.noWorker && !r.Status.Terminal() {
		p.noWorker = r.NoLiveWorker
		if r.NoLiveWorker {
			fmt.Fprintf(p.out, "%8s  no live worker serves %s@%s: its ready steps wait until one starts (see cairn workers)\n", "+"+shortDuration(p.elapsed()), r.Workflow, r.Version)
		} else {
			fmt.Fprintf(p.out, "%8s  a worker serving %s@%s is alive\n", "+"+shortDuration(p.elapsed()), r.Workflow, r.Version)
		}
	}
	for _, s := range r.Steps {
		state, detail := stepState(s, holdersKnown && !r.Status.Terminal(), p.clock.serverNow())
		if p.steps[s.ID] == state {
			continue
		}
		if strings.HasPrefix(state, "waiting for a worker") && !r.NoLiveWorker {
			since, ok := p.unheld[s.ID]
			if !ok {
				p.unheld[s.ID] = time.Now()
				continue
			}
			if time.Since(since) < workerGrace {
				continue
			}
		} else {
			delete(p.unheld, s.ID)
		}
		if p.steps[s.ID] == "" && state == "pending" {
			p.steps[s.ID] = state
			continue
		}
		p.steps[s.ID] = state
		line := fmt.Sprintf("%8s  [%d/%d]  %-20s %s", "+"+shortDuration(p.elapsed()), r.StepsDone, r.StepsTotal, s.ID, state)
		if detail != "" {
			line += "  " + detail
		}
		fmt.Fprintln(p.out, line)
	}
	p.statusLine()
}

// stepState names a step's state for people, with a detail. holdersKnown
// says the view read who holds the ready steps (a ready step with no
// holder then waits for a worker); now is the server's time as the view
// knows it (zero: the client's), which a retry's time is compared with.
func stepState(s sdk.StepView, holdersKnown bool, now time.Time) (string, string) {
	state, detail := stepStatus(s, holdersKnown, now)
	if s.Visits > 1 { // a loop ran it again
		state += fmt.Sprintf(" (visit %d)", s.Visits)
	}
	return state, detail
}

// stepStatus is stepState without the visit.
func stepStatus(s sdk.StepView, holdersKnown bool, now time.Time) (string, string) {
	if now.IsZero() {
		now = time.Now()
	}
	switch s.Status {
	case cairn.StepReady:
		if state, detail, ok := suspended(s, now); ok {
			return state, detail
		}
		var state string
		var detail []string
		switch {
		case s.Holder != nil:
			state = "running"
			held := "on " + s.Holder.Worker + " since " + clock(s.Holder.ClaimedAt)
			if s.Holder.StartedAt != nil {
				held += ", started"
			}
			detail = append(detail, held)
		case s.ReadyAt != nil && s.ReadyAt.After(now):
			state = "retry pending"
			detail = append(detail, "at "+clock(*s.ReadyAt))
		case holdersKnown:
			state = "waiting for a worker"
		default:
			state = "ready"
		}
		if s.Attempt > 1 {
			state = fmt.Sprintf("%s (attempt %d)", state, s.Attempt)
		}
		if e := previousError(s); e != nil {
			detail = append(detail, "after "+e.Class+": "+abbrev(e.Message, 80))
		}
		return state, strings.Join(detail, "; ")
	case cairn.StepWaiting:
		state := "waiting for an event"
		if s.Event != "" {
			state = "waiting for event " + s.Event
		}
		if s.WakeAt != nil {
			return state, "until " + clock(*s.WakeAt)
		}
		return state, ""
	case cairn.StepSleeping:
		if s.WakeAt != nil {
			return "sleeping", "until " + clock(*s.WakeAt)
		}
		return "sleeping", ""
	case cairn.StepMapping:
		if m := s.Map; m != nil {
			detail := fmt.Sprintf("%d running", m.Running)
			if m.Failed > 0 {
				detail += fmt.Sprintf(", %d failed", m.Failed)
			}
			return fmt.Sprintf("mapping %d/%d", m.Completed+m.Failed, m.Total), detail
		}
		return "mapping", ""
	case cairn.StepInterrupted:
		return "interrupted: waiting for input", abbrev(string(s.Interrupt), 120)
	case cairn.StepChildRunning:
		if s.Child != "" {
			return "waiting for its child run", s.Child
		}
		return "starting its child run", ""
	case cairn.StepFailed:
		if s.Error != nil {
			return "failed", s.Error.Class + ": " + abbrev(s.Error.Message, 120)
		}
		return "failed", ""
	case cairn.StepCompleted:
		if c := s.Cached; c != nil {
			return "completed (cached)", fmt.Sprintf("from run %s #%d", c.Run, c.Attempt)
		}
		if !s.Usage.IsZero() {
			return "completed", s.Usage.String()
		}
		return "completed", ""
	}
	return string(s.Status), ""
}

// suspended names a durable function between attempts: sleeping, or
// waiting for an event or a run it invoked (its ready time far away).
func suspended(s sdk.StepView, now time.Time) (state, detail string, ok bool) {
	n := len(s.Attempts)
	if s.Kind != cairn.KindFunction || s.Holder != nil || n == 0 || s.Attempts[n-1].Outcome != cairn.OutcomeSuspended {
		return "", "", false
	}
	detail = fmt.Sprintf("%d operations", len(s.Operations))
	if s.ReadyAt != nil && s.ReadyAt.After(now) && s.ReadyAt.Before(now.AddDate(10, 0, 0)) {
		detail = "until " + clock(*s.ReadyAt) + "; " + detail
	}
	return "suspended", detail, true
}

// previousError is the error a ready step is being retried after: the
// step's (a progress reading carries the previous attempt's there), else
// its last attempt's.
func previousError(s sdk.StepView) *sdk.ErrorInfo {
	if s.Attempt <= 1 && s.Failures == 0 {
		return nil
	}
	if s.Error != nil {
		return s.Error
	}
	for i := len(s.Attempts) - 1; i >= 0; i-- {
		if e := s.Attempts[i].Error; e != nil {
			return e
		}
	}
	return nil
}

// stamp formats a moment as every CLI view and the dashboard do: in local
// time, with its offset from UTC ("2026-12-04 18:03:04 UTC+09:00").
func stamp(t time.Time) string { return stampIn(t, time.Local) }

// stampIn is stamp in the zone loc.
func stampIn(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	return t.Format(time.DateTime) + " " + zoneOf(t)
}

// zoneOf names t's zone by its offset: "UTC", "UTC+09:00", "UTC-05:00".
func zoneOf(t time.Time) string {
	_, off := t.Zone()
	if off == 0 {
		return "UTC"
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return fmt.Sprintf("UTC%s%02d:%02d", sign, off/3600, off%3600/60)
}

// clock formats a moment in a table: the time of day when it is today,
// else the date too, in local time (the table says which zone).
func clock(t time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// statusLine redraws the live line on a terminal: steps done, the current
// steps, elapsed time.
func (p *progress) statusLine() {
	if !p.tty || p.last == nil || p.last.Status.Terminal() {
		return
	}
	r := p.last
	var current []string
	for _, s := range r.Steps {
		if s.Status.Active() {
			current = append(current, s.ID)
		}
	}
	cur := strings.Join(current, ", ")
	if cur == "" {
		cur = "-"
	}
	fmt.Fprintf(p.out, "\r\033[K… %s  %d/%d steps  current: %s  %s", r.Status, r.StepsDone, r.StepsTotal, abbrev(cur, 60), shortDuration(p.elapsed()))
	p.line = true
}

func (p *progress) clearLine() {
	if p.line {
		fmt.Fprint(p.out, "\r\033[K")
		p.line = false
	}
}

func newRunsGetCmd(cf *clientFlags) *cobra.Command {
	of := new(outputFlag)
	cmd := &cobra.Command{
		Use:   "get <run>",
		Short: "Show a run: status, steps, output",
		Args:  cobra.ExactArgs(1),
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			r, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var doc any = r
			if format != outTable {
				if doc, err = cf.pl.doc(r); err != nil {
					return err
				}
			}
			return emit(out, format, doc, []any{doc}, func() error {
				printRun(out, r, cf.pl)
				return nil
			})
		}),
	}
	of.addTo(cmd)
	return cmd
}

func newRunsInputCmd(cf *clientFlags) *cobra.Command {
	var attempt int
	cmd := &cobra.Command{
		Use:   "input <run> <step>",
		Short: "Show the input a step's attempt was given",
		Long: "The rendered input the attempt's lease gave its worker (the latest attempt unless --attempt), " +
			"as JSON; kept when at most 8 KiB, else only its size is known. Audited like reading the run.",
		Example: `  cairn runs input 7YB… draft_reply
  cairn runs input 7YB… check --attempt 1`,
		Args: cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			n := attempt
			if n == 0 {
				r, err := c.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				s := r.Step(args[1])
				if s == nil || s.Attempt == 0 {
					return fmt.Errorf("step %s of run %s has no attempt", args[1], args[0])
				}
				n = s.Attempt
			}
			in, err := c.StepInput(cmd.Context(), args[0], args[1], n)
			if err != nil {
				return err
			}
			if !in.Kept {
				return fmt.Errorf("the input of attempt %d was not kept: %d bytes, over 8 KiB", n, in.Bytes)
			}
			return printPayloadJSON(cmd.OutOrStdout(), cf.pl, in.Input)
		}),
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the attempt (default: the latest)")
	return cmd
}

func printRun(out io.Writer, r *sdk.Run, pl *payloads) {
	fmt.Fprintf(out, "run       %s\n", r.ID)
	fmt.Fprintf(out, "workflow  %s@%s\n", r.Workflow, r.Version)
	fmt.Fprintf(out, "status    %s (%d/%d steps)\n", r.Status, r.StepsDone, r.StepsTotal)
	if r.NoLiveWorker {
		fmt.Fprintf(out, "workers   none alive serves %s@%s: its ready steps wait until one starts (see cairn workers)\n", r.Workflow, r.Version)
	}
	fmt.Fprintf(out, "started   %s (%s)\n", stamp(r.CreatedAt), ago(r.CreatedAt))
	if r.EndedAt != nil {
		fmt.Fprintf(out, "ended     %s (took %s)\n", stamp(*r.EndedAt), shortDuration(r.EndedAt.Sub(r.CreatedAt)))
	}
	if r.Deadline != nil {
		fmt.Fprintf(out, "deadline  %s\n", stamp(*r.Deadline))
	}
	if r.Correlation != "" {
		fmt.Fprintf(out, "corr.     %s\n", r.Correlation)
	}
	if len(r.Attributes) > 0 {
		fmt.Fprintf(out, "attrs     %s\n", cairn.AttributesText(r.Attributes))
	}
	if r.Event != nil {
		fmt.Fprintf(out, "event     %s (id %s) started it\n", r.Event.Name, r.Event.ID)
	}
	if r.ContinuedFrom != "" {
		fmt.Fprintf(out, "from      %s (its function continued as this run)\n", r.ContinuedFrom)
	}
	if r.ContinuedAs != "" {
		fmt.Fprintf(out, "next      %s (the function continued as new: cairn runs get %s)\n", r.ContinuedAs, r.ContinuedAs)
	}
	if r.Error != nil {
		fmt.Fprintf(out, "error     %s\n", errorText(r.Error, ""))
	}
	if !r.Usage.IsZero() {
		fmt.Fprintf(out, "usage     %s\n", r.Usage.String())
	}
	if r.Budget != nil {
		fmt.Fprintf(out, "budget    %s\n", r.Budget)
	}
	if len(r.PendingEvents) > 0 {
		fmt.Fprintf(out, "events    %s (received, not waited for yet)\n", strings.Join(r.PendingEvents, ", "))
	}
	fmt.Fprintln(out)
	tw := newTable(out)
	fmt.Fprintln(tw, "STEP\tKIND\tSTATUS\tATTEMPTS\tDETAIL")
	for _, s := range r.Steps {
		state, detail := stepState(s, !r.Status.Terminal(), time.Time{})
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.Kind, state, len(s.Attempts), detail)
	}
	tw.Flush()
	if len(r.State) > 0 {
		b, _ := json.Marshal(r.State)
		fmt.Fprintf(out, "\nstate:\n%s\n", pl.text(b))
	}
	if len(r.Output) > 0 {
		fmt.Fprintf(out, "\noutput:\n%s\n", pl.text(r.Output))
	}
}

func newRunsListCmd(cf *clientFlags) *cobra.Command {
	var (
		workflow, status, cursor string
		limit                    int
		all                      bool
		attrs                    []string
		of                       = new(outputFlag)
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Example: `  cairn runs list --workflow triage --status failed
  cairn runs list --attr customer:acme --attr 'amount>100'
  cairn runs list --all -o jsonl | jq -r .id`,
		Args: cobra.NoArgs,
		RunE: cf.runOutput(of, func(cmd *cobra.Command, args []string, c *sdk.Client, format string) error {
			o := sdk.ListOptions{Workflow: workflow, Status: cairn.RunStatus(status), Limit: limit, Cursor: cursor, Attrs: attrs}
			runs := []sdk.RunSummary{}
			next := ""
			if all {
				for r, err := range c.Runs(cmd.Context(), o) {
					if err != nil {
						return err
					}
					runs = append(runs, r)
				}
			} else {
				var err error
				if runs, next, err = listRuns(cmd.Context(), c, o); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			err := emit(out, format, map[string]any{"runs": runs, "next_cursor": next}, runs, func() error {
				color := colorOK(out, os.Getenv)
				tw := newTable(out)
				withAttrs := slices.ContainsFunc(runs, func(r sdk.RunSummary) bool { return len(r.Attributes) > 0 })
				fmt.Fprint(tw, "RUN\tWORKFLOW\tSTATUS\tSTEPS\tSTARTED ("+zoneOf(time.Now())+")\tTOOK\tERROR")
				if withAttrs {
					fmt.Fprint(tw, "\tATTRIBUTES")
				}
				fmt.Fprintln(tw)
				for _, r := range runs {
					took := "-"
					if r.EndedAt != nil {
						took = shortDuration(r.EndedAt.Sub(r.CreatedAt))
					}
					errText := abbrev(errorText(r.Error, ""), 60)
					fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%d/%d\t%s\t%s\t%s", r.ID, r.Workflow, r.Version, paintStatus(string(r.Status), color), r.StepsDone, r.StepsTotal, ago(r.CreatedAt), took, errText)
					if withAttrs {
						fmt.Fprint(tw, "\t"+cairn.AttributesText(r.Attributes))
					}
					fmt.Fprintln(tw)
				}
				return tw.Flush()
			})
			if err == nil && next != "" && format == outTable {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: cairn runs list --cursor %s (or --all)\n", next)
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&workflow, "workflow", "", "only runs of this workflow")
	f.StringVar(&status, "status", "", "only runs in this status (running, paused, completed, failed, cancelled, timed_out)")
	f.IntVar(&limit, "limit", 20, fmt.Sprintf("runs to list: pages are read until this many match (at most %d pages; then the cursor of the rest is printed)", listPages))
	f.StringVar(&cursor, "cursor", "", "the page after this cursor")
	f.StringArrayVar(&attrs, "attr", nil, "only runs whose search attribute satisfies name:value, name>value, name>=value, name<value or name<=value (repeat: all hold); they come by the first one's value, newest first")
	f.BoolVar(&all, "all", false, "read every page")
	of.addTo(cmd)
	return cmd
}

// listPages bounds the pages runs list reads to fill --limit. The server
// answers a filtered page after examining a bounded part of the bucket
// (up to 16 reads of as many runs as are still wanted), so a page may be
// short, or empty, and still have a cursor. Following cursors until
// --limit runs match makes the listing what was asked; the bound keeps a
// filter that matches nothing recent from reading the whole bucket one
// request after another (--all does that on purpose): past it the CLI
// prints what it found and the cursor to go on from.
const listPages = 50

// listRuns reads pages of runs matching o until it has o.Limit of them
// or the listing ends or listPages pages were read. Each page asks for no
// more runs than are still wanted, so the next cursor returned is where
// the rest starts.
func listRuns(ctx context.Context, c *sdk.Client, o sdk.ListOptions) ([]sdk.RunSummary, string, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = 20
	}
	runs := []sdk.RunSummary{}
	for pages := 0; pages < listPages && len(runs) < limit; pages++ {
		o.Limit = limit - len(runs)
		p, err := c.List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		runs = append(runs, p.Runs...)
		o.Cursor = p.NextCursor
		if o.Cursor == "" {
			break
		}
	}
	return runs, o.Cursor, nil
}

func newRunsJournalCmd(cf *clientFlags) *cobra.Command {
	var (
		of     = new(outputFlag)
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "journal <run>",
		Short: "Show what happened to a run, oldest first",
		Example: `  cairn runs journal 01KB…
  cairn runs journal 01KB… --follow -o jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := of.get()
			if err != nil {
				return err
			}
			if follow && format == outJSON {
				return fmt.Errorf("--follow prints entries as they come: use -o table or -o jsonl, not json")
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if follow {
				return followJournal(cmd.Context(), c, cf.pl, args[0], out, format)
			}
			j, err := c.Journal(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if j == nil {
				j = []sdk.JournalEntry{}
			}
			var doc any = j
			if format != outTable {
				if doc, err = cf.pl.doc(j); err != nil {
					return err
				}
			}
			items := make([]any, len(j))
			for i := range j {
				items[i] = j[i]
			}
			if d, ok := doc.(json.RawMessage); ok { // decrypted
				var decoded []json.RawMessage
				if err := json.Unmarshal(d, &decoded); err != nil {
					return err
				}
				for i := range decoded {
					items[i] = decoded[i]
				}
			}
			return emit(out, format, doc, items, func() error {
				fmt.Fprintln(out, journalHeader())
				for _, e := range j {
					fmt.Fprintln(out, journalRow(e))
				}
				return nil
			})
		},
	}
	of.addTo(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new entries until the run ends (Ctrl-C stops following, not the run)")
	return cmd
}

func newRunsCancelCmd(cf *clientFlags) *cobra.Command {
	var reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cancel <run>",
		Short: "Cancel a running run",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			r, err := c.Cancel(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			if asJSON {
				return printPayloadJSON(cmd.OutOrStdout(), cf.pl, r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cancelled run %s (%d/%d steps had completed)\n", r.ID, r.StepsDone, r.StepsTotal)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the journal")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

// newRunsPauseCmd is runs pause, or with resume runs resume.
func newRunsPauseCmd(cf *clientFlags, resume bool) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pause <run>",
		Short: "Pause a running run: no step of it is offered to a worker, and its timers wait, until it is resumed",
		Long: `pause holds a run: none of its steps is offered to a worker, and its
sleeps, retry backoffs, wait timeouts and deadline that come due act only
when it is resumed. Steps a worker holds when it is paused go on and
their outcomes are recorded; the steps after them start at the resume.
Pausing a paused run changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			act, did := c.Pause, "paused"
			if resume {
				act, did = c.Resume, "resumed"
			}
			r, err := act(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printPayloadJSON(cmd.OutOrStdout(), cf.pl, r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s run %s: %s (%d/%d steps)\n", did, r.ID, r.Status, r.StepsDone, r.StepsTotal)
			return nil
		}),
	}
	if resume {
		cmd.Use, cmd.Short = "resume <run>", "Resume a paused run: its ready steps are offered again and what came due meanwhile acts now"
		cmd.Long = `resume runs a paused run again: its ready steps are offered to workers,
the timers that came due while it was paused act now (a deadline that
passed times it out), and the steps whose dependencies completed start.
Resuming a running run changes nothing.`
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func newRunsResumeStepCmd(cf *clientFlags) *cobra.Command {
	var value string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume-step <run> <step>",
		Short: "Answer a step whose body interrupted: it runs again with the value",
		Long: `resume-step answers a step whose body interrupted (its status is
interrupted; runs get shows the payload it asked with): its next attempt
runs at once, and the body sees that it was resumed, the value and the
payload. Resuming it again with the same value changes nothing; a step
that is not interrupted is refused.`,
		Example: `  cairn runs resume-step 7YBQ… review --value '{"approved":true}'`,
		Args:    cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			v, err := optionalJSONArg(cmd, "value", value) // null when absent
			if err != nil {
				return err
			}
			r, err := c.ResumeStep(cmd.Context(), args[0], args[1], v)
			if err != nil {
				return err
			}
			if asJSON {
				return printPayloadJSON(cmd.OutOrStdout(), cf.pl, r)
			}
			st := r.Step(args[1])
			fmt.Fprintf(cmd.OutOrStdout(), "resumed step %s of run %s: %s (attempt %d)\n", args[1], r.ID, st.Status, st.Attempt)
			return nil
		}),
	}
	cmd.Flags().StringVar(&value, "value", "", "the answer: JSON, @file, or - for stdin (default null)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func newRunsEventCmd(cf *clientFlags) *cobra.Command {
	var payload, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "event <run> <name>",
		Short:   "Send an event to a run (the first wait waiting for it takes it)",
		Example: `  cairn runs event 7YBQ… approved --payload '{"approver":"ana"}'`,
		Args:    cobra.ExactArgs(2),
		RunE: cf.run(func(cmd *cobra.Command, args []string, c *sdk.Client) error {
			p, err := optionalJSONArg(cmd, "payload", payload)
			if err != nil {
				return err
			}
			res, err := c.SendEvent(cmd.Context(), args[0], sdk.Event{Name: args[1], ID: id, Payload: p})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				return printJSON(out, res)
			case res.Duplicate:
				fmt.Fprintf(out, "event %s: duplicate id, ignored\n", args[1])
			case len(res.Resumed) > 0:
				fmt.Fprintf(out, "event %s: resumed %s\n", args[1], strings.Join(res.Resumed, ", "))
			default:
				fmt.Fprintf(out, "event %s: recorded; the next wait for it will take it\n", args[1])
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&payload, "payload", "", "event payload: JSON, @file, or - for stdin")
	cmd.Flags().StringVar(&id, "id", "", "event id: sending the same id again is ignored")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
