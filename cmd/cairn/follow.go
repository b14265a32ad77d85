package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/internal/ctxsleep"
	"github.com/cairn-dev/cairn/sdk"
)

// followHold is how long one status call is held while nothing but the
// rev can change; followPoll is how long while a ready step waits for a
// worker or a retry (a claim does not change the rev, so the CLI asks
// again to see it held).
var (
	followHold = 20 * time.Second
	followPoll = time.Second
)

// followRun reads a run's progress (with the holders of its ready steps)
// until the run ends, calling fn with each reading; changed says it
// differs from the one before (a new rev, other holders, the
// no-live-worker flag). It
// returns the last reading; a transient server error is retried with
// backoff; ctx's end returns ctx.Err().
func followRun(ctx context.Context, c *sdk.Client, id string, fn func(p *sdk.RunProgress, changed bool) error) (*sdk.RunProgress, error) {
	var last *sdk.RunProgress
	backoff := 100 * time.Millisecond
	for {
		o := sdk.StatusOptions{Holders: true}
		if last != nil {
			o.After, o.Wait = last.Rev, pollWait(last)
		}
		p, err := c.Status(ctx, id, o)
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			if !sdk.Temporary(err) {
				return last, err
			}
			if ctxsleep.Sleep(ctx, backoff) != nil {
				return last, ctx.Err()
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if err := fn(p, last == nil || progressKey(p) != progressKey(last)); err != nil {
			return p, err
		}
		last = p
		if p.Status.Terminal() {
			return p, nil
		}
	}
}

// pollWait is how long the next status call may be held: followHold,
// or followPoll while a ready step waits for a worker (whose claim the
// rev will not show), or until a retry's backoff ends.
func pollWait(p *sdk.RunProgress) time.Duration {
	w := followHold
	for _, s := range p.Steps {
		if s.Status != cairn.StepReady || s.Attempt == 0 || s.Holder != nil {
			continue
		}
		d := followPoll
		if s.ReadyAt != nil {
			d = max(d, time.Until(*s.ReadyAt))
		}
		w = min(w, d)
	}
	return w
}

// progressKey is what makes a reading worth showing.
func progressKey(p *sdk.RunProgress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%s|%t|", p.Rev, p.Status, p.NoLiveWorker)
	for _, s := range p.Steps {
		if s.Holder != nil {
			fmt.Fprintf(&b, "%s=%s;", s.ID, s.Holder.Worker)
			if s.Holder.StartedAt != nil {
				b.WriteString("+")
			}
		}
	}
	return b.String()
}

// followJournal prints a run's journal and then each new entry as the
// run goes on, until it ends (or ctx: Ctrl-C ends it quietly). Entries are
// told apart by time, type, step, attempt and worker: the running
// attempts' claimed and started entries come from their leases and may
// sort before entries printed already, and are printed once.
func followJournal(ctx context.Context, c *sdk.Client, pl *payloads, id string, out io.Writer, format string) error {
	seen := map[string]bool{}
	header := false
	show := func() error {
		j, err := c.Journal(ctx, id)
		if err != nil {
			return err
		}
		for _, e := range j {
			k := fmt.Sprintf("%s|%s|%s|%d|%s|%s", e.At.UTC().Format(time.RFC3339Nano), e.Type, e.Step, e.Attempt, e.Worker, e.Message)
			if seen[k] {
				continue
			}
			seen[k] = true
			if format == outJSONL {
				d, err := pl.doc(e)
				if err != nil {
					return err
				}
				if err := printJSONLine(out, d); err != nil {
					return err
				}
				continue
			}
			if !header {
				fmt.Fprintln(out, journalHeader())
				header = true
			}
			fmt.Fprintln(out, journalRow(e))
		}
		return nil
	}
	_, err := followRun(ctx, c, id, func(_ *sdk.RunProgress, changed bool) error {
		if !changed {
			return nil // the journal is audited: read it only when something happened
		}
		return show()
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // Ctrl-C: stop following, quietly
	}
	return err
}

// journalHeader and journalRow lay a journal out in fixed columns, so
// the rows --follow prints later line up with the first ones.
func journalHeader() string {
	return strings.TrimRight(fmt.Sprintf("%-12s  %-20s  %-20s  %-16s  %s", "TIME", "EVENT", "STEP", "WORKER", "DETAIL"), " ")
}

func journalRow(e sdk.JournalEntry) string {
	step := e.Step
	if e.Attempt > 0 {
		step = fmt.Sprintf("%s #%d", e.Step, e.Attempt)
	}
	detail := e.Message
	if e.Cached != nil {
		detail = strings.TrimSpace("cached from run " + e.Cached.Run + " " + detail)
	}
	if e.Error != nil {
		detail = strings.TrimSpace(e.Error.Class + ": " + e.Error.Message + " " + detail)
	}
	return strings.TrimRight(fmt.Sprintf("%-12s  %-20s  %-20s  %-16s  %s", e.At.Local().Format("15:04:05.000"), e.Type, step, e.Worker, abbrev(detail, 100)), " ")
}

// runErr is a run that did not complete, said once: "run X cancelled:
// not needed", not "cancelled: cancelled: cancelled: not needed".
func runErr(r *sdk.Run) error {
	if !r.Status.Terminal() || r.Status == sdk.RunCompleted {
		return nil
	}
	return errors.New("run " + r.ID + " " + endReason(r))
}

// endReason says how a run ended without repeating itself: its status,
// then its error (errorText) without the class when the status says it.
func endReason(r *sdk.Run) string {
	msg := string(r.Status)
	if t := errorText(r.Error, string(r.Status)); t != "" {
		msg += ": " + t
	}
	return msg
}

// errorText says what an error is, each part once: the step, the class
// (unless it is said already, as the status), the message without the
// prefixes that repeat the class or the status. A cancelled run's error
// ({class cancelled, message "cancelled: changed my mind"}) reads
// "cancelled: changed my mind"; a failed step's "step greet: fatal: boom".
func errorText(i *sdk.ErrorInfo, said string) string {
	if i == nil {
		return ""
	}
	var parts []string
	if i.Step != "" {
		parts = append(parts, "step "+i.Step)
	}
	if i.Class != "" && i.Class != said {
		parts = append(parts, i.Class)
	}
	m := strings.TrimSpace(i.Message)
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range []string{i.Class, said} {
			if p == "" {
				continue
			}
			if m == p {
				m, trimmed = "", true
			} else if rest, ok := strings.CutPrefix(m, p+":"); ok {
				m, trimmed = strings.TrimSpace(rest), true
			}
		}
	}
	if m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, ": ")
}
