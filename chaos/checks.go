package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"

	// The checks open the store the processes share.
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/sdk"
)

// readLines decodes a JSON-lines file; a torn last line (a process killed
// mid-write cannot tear an O_APPEND line, but be safe) is reported.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return out, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// retry calls f until it succeeds or a minute passes.
func retry[T any](f func(ctx context.Context) (T, error)) (T, error) {
	var last error
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		v, err := f(ctx)
		cancel()
		if err == nil {
			return v, nil
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	var zero T
	return zero, last
}

// listAll lists every run, page by page, each page retried as one call.
func listAll(c *sdk.Client) (map[string]cairn.RunStatus, error) {
	m := map[string]cairn.RunStatus{}
	cursor := ""
	for {
		p, err := retry(func(ctx context.Context) (*sdk.RunPage, error) {
			return c.List(ctx, sdk.ListOptions{Cursor: cursor})
		})
		if err != nil {
			return nil, fmt.Errorf("after %d runs: %w", len(m), err)
		}
		for _, s := range p.Runs {
			m[s.ID] = s.Status
		}
		if p.NextCursor == "" {
			return m, nil
		}
		cursor = p.NextCursor
	}
}

// checkRuns checks every run against the execution log, through the API.
func (r *round) checkRuns(ctx context.Context) {
	rep := r.rep
	c := r.client[0]
	execs, err := readLines[Exec](r.execs)
	if err != nil {
		rep.fail("execution log: %v", err)
	}
	rep.Executions = len(execs)
	byStep := map[string][]Exec{}
	for _, e := range execs {
		if strings.HasPrefix(e.Worker, "tsworker") {
			rep.TSExecutions++
		}
		k := e.Run + "/" + e.Step
		byStep[k] = append(byStep[k], e)
	}

	// The API instances still inject store faults: each page is retried
	// on its own (the whole listing of a long round's thousands of runs
	// does not fit one call's 15 s on a loaded machine).
	listed, err := listAll(c)
	if err != nil {
		// Check the runs the starts answered with, one by one.
		rep.fail("listing runs: %v", err)
		listed = map[string]cairn.RunStatus{}
		r.mu.Lock()
		for id := range r.runs {
			listed[id] = ""
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	for id := range r.runs {
		if _, ok := listed[id]; !ok {
			rep.fail("run %s was started (201) but is not listed", id)
		}
	}
	for id := range listed {
		if _, ok := r.runs[id]; !ok {
			rep.fail("run %s is listed but no start answered with it (a duplicate of a retried start?)", id)
		}
	}
	r.mu.Unlock()
	rep.Runs = len(listed)
	if r.cfg.TSWorkers > 0 && rep.TSExecutions == 0 {
		rep.fail("the %d TypeScript workers executed nothing (see tsworker*.log: a definition the engine refused as different from the Go workers'?)", r.cfg.TSWorkers)
	}

	for id := range listed {
		run, err := retry(func(ctx context.Context) (*sdk.Run, error) { return c.Get(ctx, id) })
		if err != nil {
			rep.fail("get run %s: %v", id, err)
			continue
		}
		rep.ByStatus[run.Status]++
		rep.ByWorkflow[run.Workflow]++
		r.checkTriggered(&run.Run)
		if !run.Status.Terminal() {
			rep.Stuck++
			rep.fail("run %s (%s) did not end: %s", id, run.Workflow, stepsSummary(&run.Run))
			continue
		}
		journal, err := retry(func(ctx context.Context) ([]sdk.JournalEntry, error) { return c.Journal(ctx, id) })
		if err != nil {
			rep.fail("journal of run %s: %v", id, err)
			continue
		}
		r.journals = append(r.journals, runJournal{ID: id, Entries: journal})
		r.checkRun(&run.Run, journal, byStep)
	}
}

// checkTriggered: a run of the triggered workflow names the event whose
// publish answered it (so no publish started a second run unseen).
func (r *round) checkTriggered(run *cairn.Run) {
	if run.Workflow != WfTriggered {
		return
	}
	r.mu.Lock()
	want := r.eventOf[run.ID]
	r.mu.Unlock()
	if run.Event == nil || run.Event.ID != want || run.Event.Name != TriggerEvent {
		r.rep.fail("triggered run %s names event %+v, but the publish of %s %q answered it", run.ID, run.Event, TriggerEvent, want)
	}
}

func stepsSummary(run *cairn.Run) string {
	var parts []string
	for _, s := range run.Steps {
		parts = append(parts, fmt.Sprintf("%s:%s#%d", s.ID, s.Status, s.Attempt))
	}
	return strings.Join(parts, " ")
}

// checkRun checks one ended run's steps and journal.
func (r *round) checkRun(run *cairn.Run, journal []sdk.JournalEntry, byStep map[string][]Exec) {
	j := indexJournal(run, journal)
	if j.ended != 1 {
		r.rep.fail("run %s ended %s but its journal has %d %s entries", run.ID, run.Status, j.ended, cairn.JournalRunEnded(run.Status))
	}
	for _, s := range run.Steps {
		switch s.Kind {
		case cairn.KindTask:
			r.checkStep(run, &s, byStep[run.ID+"/"+s.ID], j)
		case cairn.KindFunction:
			r.checkFunction(run, &s, byStep[run.ID+"/"+s.ID], j)
		}
	}
}

// checkFunction checks a durable function's step: its operations'
// executions against its recorded attempts (each by the worker that held
// it), the at_most_once operation run at most once, every recorded step
// result from a logged execution of that operation, and the function's
// output (its last step's result).
func (r *round) checkFunction(run *cairn.Run, s *cairn.StepView, ex []Exec, j journalIndex) {
	rep := r.rep
	byOp := map[string][]Exec{}
	for _, e := range ex {
		byOp[e.Op] = append(byOp[e.Op], e)
	}
	for op, es := range byOp {
		amo := op == FunctionOnce
		if amo && len(es) > 1 {
			rep.DoubleAMO++
			rep.fail("at_most_once operation %s of run %s ran %d times: %+v", op, run.ID, len(es), es)
		}
		if ok := r.checkExecutions(run, s, es, amo); !amo && ok > 1 {
			rep.Duplicates += ok - 1
		}
	}
	if j.completions[s.ID] > 1 {
		rep.fail("run %s step %s completed %d times in the journal", run.ID, s.ID, j.completions[s.ID])
	}
	r.checkAttemptsJournal(run, s, j)
	results := map[string]string{}
	for _, op := range s.Operations {
		var out Output
		if op.Kind != cairn.OpStep || op.Status != cairn.OpCompleted {
			continue
		}
		if err := json.Unmarshal(op.Result, &out); err != nil || !slices.ContainsFunc(byOp[op.ID], func(e Exec) bool { return e.Nonce == out.Nonce && !e.Failed }) {
			rep.fail("run %s: operation %s recorded %s, which no logged execution of it returned (%d executions)", run.ID, op.ID, op.Result, len(byOp[op.ID]))
		}
		results[op.ID] = out.Nonce
	}
	var out Output
	if s.Status == cairn.StepCompleted && (json.Unmarshal(s.Output, &out) != nil || out.Nonce != results["/b#0"]) {
		rep.fail("run %s: the function's output %s is not its last step's result %q", run.ID, s.Output, results["/b#0"])
	}
}

// journalAttempt names one attempt of a step in a journal.
type journalAttempt struct {
	step    string
	attempt int
}

// journalIndex is what a run's journal says: the entry types of each
// attempt, how many times each step completed, and how many entries end
// the run as it ended.
type journalIndex struct {
	types       map[journalAttempt][]cairn.JournalType
	completions map[string]int
	ended       int
}

func indexJournal(run *cairn.Run, journal []sdk.JournalEntry) journalIndex {
	j := journalIndex{types: map[journalAttempt][]cairn.JournalType{}, completions: map[string]int{}}
	for _, e := range journal {
		if e.Step != "" && e.Attempt > 0 {
			k := journalAttempt{e.Step, e.Attempt}
			j.types[k] = append(j.types[k], e.Type)
		}
		if e.Type == cairn.JournalStepCompleted {
			j.completions[e.Step]++
		}
		if e.Type == cairn.JournalRunEnded(run.Status) {
			j.ended++
		}
	}
	return j
}

// has reports whether attempt n of step has a journal entry of type t.
func (j journalIndex) has(step string, n int, t cairn.JournalType) bool {
	for _, x := range j.types[journalAttempt{step, n}] {
		if x == t {
			return true
		}
	}
	return false
}

// checkStep checks one task step of an ended run: its executions (ex)
// against its recorded attempts, its attempts against the journal, and a
// completed step's output against the executions.
func (r *round) checkStep(run *cairn.Run, s *cairn.StepView, ex []Exec, j journalIndex) {
	rep := r.rep
	amo := run.Workflow == WfAMO && s.ID == "once"
	if amo && len(ex) > 1 {
		rep.DoubleAMO++
		rep.fail("at_most_once step %s of run %s ran %d times: %+v", s.ID, run.ID, len(ex), ex)
	}
	ok := r.checkExecutions(run, s, ex, amo)
	if !amo && ok > 1 {
		rep.Duplicates += ok - 1
	}
	if j.completions[s.ID] > 1 {
		rep.fail("run %s step %s completed %d times in the journal", run.ID, s.ID, j.completions[s.ID])
	}
	r.checkAttemptsJournal(run, s, j)
	if s.Status != cairn.StepCompleted {
		return
	}
	r.checkOutput(run, s, ex)
}

// checkExecutions checks a step's logged executions: each with the step's
// delivery, each by the worker of a recorded attempt. It returns how many
// of them succeeded.
func (r *round) checkExecutions(run *cairn.Run, s *cairn.StepView, ex []Exec, amo bool) (ok int) {
	rep := r.rep
	for _, e := range ex {
		if !e.Failed {
			ok++
		}
		if e.Delivery != string(cairn.AtMostOnce) && amo || e.Delivery == string(cairn.AtMostOnce) && !amo {
			rep.fail("step %s of run %s executed with delivery %s", s.ID, run.ID, e.Delivery)
		}
		// Every execution held a recorded attempt of its worker.
		found := false
		for _, a := range s.Attempts {
			if a.N == e.Attempt {
				found = true
				if a.Worker != e.Worker {
					rep.fail("run %s step %s attempt %d executed by %s but recorded for %s", run.ID, s.ID, e.Attempt, e.Worker, a.Worker)
				}
			}
		}
		if !found && run.Status != cairn.RunCompleted && s.Status != cairn.StepCompleted {
			rep.Unrecorded++
		} else if !found {
			rep.fail("run %s step %s: attempt %d executed by %s is not among the recorded attempts", run.ID, s.ID, e.Attempt, e.Worker)
		}
	}
	return ok
}

// checkAttemptsJournal checks that the journal has each recorded attempt
// of a step claimed, and ended as the attempt's outcome says.
func (r *round) checkAttemptsJournal(run *cairn.Run, s *cairn.StepView, j journalIndex) {
	rep := r.rep
	for _, a := range s.Attempts {
		if !j.has(s.ID, a.N, cairn.JournalStepClaimed) {
			rep.fail("run %s step %s attempt %d (%s) has no step_claimed journal entry", run.ID, s.ID, a.N, a.Outcome)
		}
		var want cairn.JournalType
		switch a.Outcome {
		case cairn.OutcomeCompleted:
			want = cairn.JournalStepCompleted
		case cairn.OutcomeLost:
			want = cairn.JournalLeaseLost
		}
		if want != "" && !j.has(s.ID, a.N, want) {
			rep.fail("run %s step %s attempt %d ended %s but the journal has no %s for it", run.ID, s.ID, a.N, a.Outcome, want)
		}
		if a.Outcome != cairn.OutcomeCompleted && j.has(s.ID, a.N, cairn.JournalStepCompleted) {
			rep.fail("run %s step %s attempt %d ended %s but the journal says it completed", run.ID, s.ID, a.N, a.Outcome)
		}
	}
}

// checkOutput checks a completed step's output: it is a logged successful
// execution of the step's last attempt, recorded as completed.
func (r *round) checkOutput(run *cairn.Run, s *cairn.StepView, ex []Exec) {
	rep := r.rep
	var out Output
	if err := json.Unmarshal(s.Output, &out); err != nil || out.Nonce == "" {
		rep.fail("run %s step %s completed with output %s", run.ID, s.ID, s.Output)
		return
	}
	match := false
	for _, e := range ex {
		if e.Attempt == s.Attempt && e.Nonce == out.Nonce && !e.Failed {
			match = true
		}
	}
	if !match {
		rep.fail("run %s step %s: recorded output %s (attempt %d) is no logged execution of that attempt (%d executions)", run.ID, s.ID, out.Nonce, s.Attempt, len(ex))
	}
	var last *cairn.Attempt
	for i := range s.Attempts {
		if s.Attempts[i].N == s.Attempt {
			last = &s.Attempts[i]
		}
	}
	if last == nil || last.Outcome != cairn.OutcomeCompleted {
		rep.fail("run %s step %s completed but its attempt %d is recorded as %+v", run.ID, s.ID, s.Attempt, last)
	}
}

// checkStore reads every object in the store directly and counts those
// that do not parse; on a file store it counts leftover temp files.
func (r *round) checkStore(ctx context.Context) {
	rep := r.rep
	open := r.cfg.OpenStore
	if open == nil {
		open = func(ctx context.Context) (*blob.Bucket, error) { return blob.OpenBucket(ctx, r.cfg.Store) }
	}
	b, err := open(ctx)
	if err != nil {
		rep.fail("open store: %v", err)
		return
	}
	defer b.Close()
	opts := blob.ListOptions{PageSize: 1000}
	for {
		p, err := b.List(ctx, opts)
		if err != nil {
			rep.fail("list store: %v", err)
			return
		}
		for _, a := range p.Objects {
			o, err := b.Get(ctx, a.Key)
			if err != nil {
				if errors.Is(err, blob.ErrNotFound) {
					continue
				}
				rep.fail("read %s: %v", a.Key, err)
				continue
			}
			rep.Objects++
			if !parses(a.Key, o.Data) {
				rep.Corrupt++
				rep.fail("object %s does not parse: %.80q", a.Key, o.Data)
			}
		}
		if p.NextPageToken == "" {
			break
		}
		opts.PageToken = p.NextPageToken
	}
	if r.cfg.FileRoot == "" {
		return
	}
	cutoff := time.Now().Add(-tempMaxAge)
	filepath.WalkDir(r.cfg.FileRoot, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "~tmp-") {
			if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) {
				rep.TempLeft++
			}
		}
		return nil
	})
	if rep.TempLeft > 0 {
		rep.fail("%d temporary files left in the file store", rep.TempLeft)
	}
}

// collectFaults sums the fault counts the cairn processes wrote.
func (r *round) collectFaults() {
	files, _ := filepath.Glob(filepath.Join(r.cfg.Dir, "faults", "*"))
	for _, f := range files {
		if strings.HasSuffix(f, ".tmp") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var c FaultCounts
		if json.Unmarshal(b, &c) == nil {
			r.rep.Faults.Error += c.Error
			r.rep.Faults.Conflict += c.Conflict
			r.rep.Faults.Throttle += c.Throttle
			r.rep.Faults.Lost += c.Lost
		}
	}
}

// runIDPattern is what an idempotency record holds: the run id.
var runIDPattern = regexp.MustCompile(`^[0-9A-Za-z_-]{1,64}$`)

// parses reports whether a stored object is well-formed: an idempotency
// record is a run id, everything else JSON.
func parses(key string, data []byte) bool {
	if strings.HasPrefix(key, "idempotency/") {
		return runIDPattern.Match(data)
	}
	return json.Valid(data)
}
