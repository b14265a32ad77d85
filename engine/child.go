package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/link"
)

// Child steps. A child step starts a run of another workflow and ends
// with it: completed with the child's output, or failed with its error.
//
//	child_running, no child yet ──start (idempotency key child:<run>:<step>:<attempt>)──▶ child_running(child)
//	child_running(child) ──the child ends completed──▶ completed (output: the child's)
//	                     ──the child ends otherwise──▶ failed (the child's error)
//	the parent ends first (failed, cancelled, timed out) ──▶ the child is cancelled
//
// Every change is made where it is known, right after the commit that
// makes it necessary, with the reaper as the fallback for an instance
// that died in between:
//
//   - the commit that starts the step asks its instance to start the child
//     (startChild: StartRun with the idempotency key, then record the
//     child's id in the parent); the reaper does the same for a child
//     step that has no child yet. However often it is repeated, the key
//     admits one child;
//   - the commit that ends a run with a parent link asks its instance to
//     apply the end to the parent (a guarded mutation: only while the
//     parent's step still waits for that child); the reaper, visiting
//     the parent routinely while a child runs, reads the child and does
//     the same;
//   - the commit that ends a parent asks its instance to cancel its
//     running children; a child the reaper visits reads its parent and
//     cancels itself when the parent has ended.
type childState struct {
	Attempt int    `json:"attempt"`
	Run     string `json:"run,omitempty"`
}

// parentLink is a child run's parent (engine/internal/link).
type parentLink = link.Parent

// MaxChildDepth bounds how deep runs start runs (child steps, a
// function's Invoke): a recursion that does not end fails the step that
// would go deeper, instead of starting runs without end.
const MaxChildDepth = link.MaxDepth

// linkUnder is the link of a run that step (operation op) of r starts.
func linkUnder(r *runRecord, step, op string) parentLink { return link.Under(r.ID, r.Parent, step, op) }

var childKind = &stepKind{
	active: cairn.StepChildRunning,
	// start and visit are set in kinds.go's init: they reach the committer.
	// No child yet: visit at once (start it). A running child: the
	// routine visit that reads it, in case its end was not applied.
	wake: func(e *Engine, st *stepState, now time.Time) time.Time {
		if st.Child == nil || st.Child.Run == "" {
			return now
		}
		return now.Add(e.cfg.ActiveCheckInterval)
	},
}

// startChildStep is the child kind's start: the step runs, and the
// commit asks its instance to start the child run (the reaper's visit is
// the fallback).
func (e *Engine) startChildStep(r *runRecord, d *definition, s *cairn.Step, fx *effects) {
	st := r.Steps[s.ID]
	st.Status = cairn.StepChildRunning
	st.Child = &childState{Attempt: 1}
	run, step := r.ID, s.ID
	e.inBackground(fx, run, step, "child: starting the child run failed; the reaper starts it", func(ctx context.Context) error {
		return e.startChild(ctx, run, d, step)
	})
}

// visitChild is the child kind's visit: start the child run if it has
// none yet, or apply its end if it ended.
func visitChild(ctx context.Context, e *Engine, r *runRecord, d *definition, s *cairn.Step) error {
	st := r.Steps[s.ID]
	if st.Child == nil || st.Child.Run == "" {
		return e.startChild(ctx, r.ID, d, s.ID)
	}
	c, err := e.readRun(ctx, st.Child.Run)
	if err != nil {
		return err
	}
	if c.Status.Terminal() {
		return e.childEnded(ctx, c)
	}
	return nil
}

// startChild starts the child run of a child step (idempotently) and
// records its id in the parent.
func (e *Engine) startChild(ctx context.Context, run string, d *definition, step string) error {
	r, err := e.readRun(ctx, run)
	if err != nil {
		return err
	}
	st := r.Steps[step]
	s := d.Step(step)
	if r.Status.Terminal() || st == nil || s == nil || st.Status != cairn.StepChildRunning || st.Child == nil || st.Child.Run != "" {
		return nil
	}
	attempt := st.Child.Attempt
	input, err := d.templates[step].Render(e.renderVarsFor(r, d, step))
	if err != nil {
		return e.failChildStep(ctx, run, step, attempt, cairn.ErrorInfo{Class: cairn.ClassRenderError, Message: fmt.Sprintf("template of step %s: %v", step, err)})
	}
	return e.startLinked(ctx, cairn.StartRequest{Workflow: s.Workflow, Version: s.ChildVersion, Input: input,
		Correlation: r.Correlation, IdempotencyKey: link.ChildKey(run, step, attempt)}, linkUnder(r, step, ""),
		func(err error) error {
			return e.failChildStep(ctx, run, step, attempt, cairn.ErrorInfo{Class: cairn.ClassFatal, Message: fmt.Sprintf("child run of workflow %s could not start: %v", s.Workflow, err)})
		},
		func(st *stepState) bool { return st.Status == cairn.StepChildRunning && st.Child.Attempt == attempt }, "")
}

// startLinked starts the run req names for a step (link: the parent run,
// step and operation), once however often it is called (req's idempotency
// key). A run that cannot start (no such workflow, an input it refuses)
// goes to cannot; a started run's id is recorded in the step while owns
// says the step still waits for it; a run that ended at its start has its
// end applied. A store failure is returned: the reaper tries again.
func (e *Engine) startLinked(ctx context.Context, req cairn.StartRequest, link parentLink, cannot func(err error) error, owns func(st *stepState) bool, note string) error {
	if err := link.TooDeep(); err != nil {
		return cannot(err)
	}
	res, err := e.startRun(ctx, req, func(c *runRecord, _ *definition, _ time.Time) { l := link; c.Parent = &l })
	if errors.As(err, new(*NotFoundError)) || errors.As(err, new(cairn.ValidationError)) {
		return cannot(err)
	}
	if err != nil {
		return err
	}
	child := res.Run.ID
	_, err = mutate(ctx, e.commits, link.Run, func(r *runRecord, fx *effects) (struct{}, error) {
		if st := r.Steps[link.Step]; !r.Status.Terminal() && st != nil && st.Child != nil && st.Child.Run == "" && owns(st) {
			st.Child.Run = child
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalChildStarted, Step: link.Step, Message: "child run " + child + " of " + req.Workflow + "@" + res.Run.Version + note})
		}
		return struct{}{}, nil
	})
	if err != nil || !res.Run.Status.Terminal() {
		return err
	}
	c, err := e.readRun(ctx, child) // ended at its start (every step skipped, a deadline passed)
	if err != nil {
		return err
	}
	return e.childEnded(ctx, c)
}

func (e *Engine) failChildStep(ctx context.Context, run, step string, attempt int, why cairn.ErrorInfo) error {
	_, err := mutate(ctx, e.commits, run, func(r *runRecord, fx *effects) (struct{}, error) {
		st := r.Steps[step]
		if r.Status.Terminal() || st == nil || st.Status != cairn.StepChildRunning || st.Child == nil || st.Child.Attempt != attempt {
			return struct{}{}, nil
		}
		e.failStepAndRun(r, step, why, cairn.JournalEntry{}, fx)
		return struct{}{}, nil
	})
	return err
}

// childEnded applies an ended child run to its parent's step: a guarded
// mutation, applied only while the step still waits for this child.
func (e *Engine) childEnded(ctx context.Context, c *runRecord) error {
	p := c.Parent
	if p == nil || !c.Status.Terminal() {
		return nil
	}
	if c.Status == cairn.RunCompleted {
		if err := e.payloads.Adopt(ctx, c.ID, p.Run, c.Output); err != nil {
			return err
		}
	}
	if p.Op != "" { // a function's invoke (function.go)
		if c.IdempotencyKey != link.InvokeKey(p.Run, p.Step, p.Op) {
			return nil
		}
		if c.Status == cairn.RunCompleted {
			return e.invokeDone(ctx, p.Run, p.Step, p.Op, c.ID, c.Output, nil)
		}
		return e.invokeDone(ctx, p.Run, p.Step, p.Op, c.ID, nil, childError(c))
	}
	pr, err := e.readRun(ctx, p.Run)
	if err != nil {
		return err
	}
	d, err := e.definition(ctx, pr.Workflow, pr.rev())
	if err != nil {
		return err
	}
	_, err = mutate(ctx, e.commits, p.Run, func(r *runRecord, fx *effects) (struct{}, error) {
		st := r.Steps[p.Step]
		if r.Status.Terminal() || st == nil || st.Status != cairn.StepChildRunning || st.Child == nil ||
			st.Child.Run != "" && st.Child.Run != c.ID || c.IdempotencyKey != link.ChildKey(p.Run, p.Step, st.Child.Attempt) {
			return struct{}{}, nil
		}
		if st.Child.Run == "" { // it ended before its start recorded it (its first step handed to a held claim can)
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalChildStarted, Step: p.Step, Message: "child run " + c.ID + " of " + c.Workflow + "@" + c.Version})
		}
		st.Child.Run = c.ID
		if c.Status == cairn.RunCompleted {
			st.Status, st.Output = cairn.StepCompleted, c.Output
			if len(st.Output) == 0 {
				st.Output = json.RawMessage("null")
			}
			r.journal(fx.now, cairn.JournalEntry{Type: cairn.JournalStepCompleted, Step: p.Step, Message: "child run " + c.ID + " completed"})
			e.advance(r, d, fx)
			return struct{}{}, nil
		}
		e.failStepAndRun(r, p.Step, *childError(c), cairn.JournalEntry{}, fx)
		return struct{}{}, nil
	})
	return err
}

// childError is why a child run that did not complete fails its parent.
func childError(c *runRecord) *cairn.ErrorInfo { return link.ChildError(c.ID, c.Status, c.Error) }

// runLinksAfterCommit is what a committed batch that ended its run asks
// of this instance: apply the end to the parent, cancel running
// children. Called from afterCommit.
func (e *Engine) runLinksAfterCommit(fx *effects) {
	r := fx.run
	if r == nil || !r.Status.Terminal() || fx.journalFrom >= len(r.Journal) {
		return
	}
	if !link.EndedIn(r.Status, r.Journal[fx.journalFrom:]) {
		return
	}
	var children []string
	for _, st := range r.Steps {
		if st.Status == cairn.StepCancelled && st.Child != nil && st.Child.Run != "" {
			children = append(children, st.Child.Run)
		}
	}
	link.AfterEnd(e.flows.Go, e.cfg.CommitTimeout, e.log, link.Ended{ID: r.ID, Status: r.Status, Parent: r.Parent, Children: children},
		func(ctx context.Context) error { return e.childEnded(ctx, r) }, e.CancelRun)
}

// checkParent cancels a running child whose parent ended (the fallback
// of the cancel the parent's instance sends): the reaper calls it when it
// visits a run with a parent.
func (e *Engine) checkParent(ctx context.Context, r *runRecord) error {
	if r.Parent == nil || r.Status.Terminal() {
		return nil
	}
	return link.CheckParent(ctx, r.ID, r.Parent.Run, e.runState, e.CancelRun)
}

func childOf(st *stepState) string {
	if st.Child == nil {
		return ""
	}
	return st.Child.Run
}
