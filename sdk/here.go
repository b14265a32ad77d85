package sdk

import (
	"context"
	"errors"
	"fmt"
)

// RunHere starts a run of wf and serves its steps in this process until
// the run ends, then returns it as Client.Wait does: a run that failed is
// returned with a nil error (Run.Err says how it ended), and a function's
// run that continued as new is followed, and served, to the last run of
// the chain. It is how a script drives its own run, with no worker
// running elsewhere.
//
// It registers wf as a worker would (opts configure that worker: its
// name, concurrency, logger, codec, …), starts the run with o (o.Version
// is wf's; Start's other options apply: an IdempotencyKey makes a script
// run again attach to the run it started before and drive it on), and
// claims only steps of that run, each served as a Worker serves it:
// retries, heartbeats, at_most_once, durable functions, payloads by
// reference and the codec behave the same. Steps of other runs are left
// to other workers, child runs (a child step's, an invoke's) included.
// A step of this run is claimed by whichever asks first, this process or
// another worker that serves wf.
//
// Cancelling ctx stops serving (the steps running are drained as Serve
// drains them) and cancels nothing on the server: the run goes on with
// whatever worker claims its steps. RunHere then returns ctx's error,
// with the run as started.
func RunHere(ctx context.Context, c *Client, wf *WorkflowDef, o StartOptions, opts ...WorkerOption) (*Run, error) {
	if wf == nil {
		return nil, errors.New("cairn: RunHere needs a workflow")
	}
	if o.Version != "" && o.Version != wf.Version() {
		return nil, fmt.Errorf("cairn: RunHere runs %s@%s, the version served here, not %s", wf.Name(), wf.Version(), o.Version)
	}
	o.Version = wf.Version()
	w := NewWorker(c, opts...).Register(wf)
	var started *Run
	type result struct {
		run *Run
		err error
	}
	followed := make(chan result, 1)
	err := w.serve(ctx, func(ctx context.Context) (context.Context, error) {
		r, err := c.Start(ctx, wf.Name(), o)
		if err != nil {
			return nil, err
		}
		started = r
		w.scopeTo(r.ID)
		claimCtx, stop := context.WithCancel(ctx)
		go func() {
			defer stop()
			r, err := w.follow(ctx, r.ID)
			followed <- result{r, err}
		}()
		return claimCtx, nil
	})
	switch {
	case err != nil:
		return started, err
	case started == nil: // ctx ended before the run started
		return nil, fmt.Errorf("cairn: RunHere: %w", ctx.Err())
	}
	res := <-followed // follow ends once the run did, or ctx
	switch {
	case ctx.Err() != nil:
		return started, fmt.Errorf("cairn: stopped serving run %s: %w", started.ID, ctx.Err())
	case res.err != nil:
		return started, res.err
	}
	return res.run, nil
}

// follow waits for run to end, scoping the worker's claims to the run it
// continues as, if any, and returns the last run of the chain. The runs
// that ended have their bodies stopped.
func (w *Worker) follow(ctx context.Context, run string) (*Run, error) {
	for {
		r, err := w.c.waitOne(ctx, run)
		if err != nil {
			return nil, err
		}
		if r.ContinuedAs != "" {
			w.scopeTo(r.ContinuedAs)
		}
		w.runEnded(run)
		if r.ContinuedAs == "" {
			return r, nil
		}
		run = r.ContinuedAs
	}
}

// scopeTo scopes the worker's claims to run, cancelling the claim in
// flight scoped to another.
func (w *Worker) scopeTo(run string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.scope != run && w.claimCancel != nil {
		w.claimCancel(errRescoped)
	}
	w.scope = run
}

// errRescoped cancels a claim whose scope changed.
var errRescoped = errors.New("cairn: the claims are scoped to another run")

// scoped returns the run the worker's claims are scoped to, if any.
func (w *Worker) scoped() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scope
}
