// Package link is the bookkeeping of the links between runs: a child run's
// link to its parent (a child step, or a function's invoke), how deep runs
// nest, the idempotency keys that admit one child per attempt or
// operation, and what a child's end says to its parent. What a link does
// to either run is the engine's (engine/child.go).
package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// Parent is a child run's parent: the run and its child step, or the
// function step and the operation that invoked it (engine/function.go).
type Parent struct {
	Run  string `json:"run"`
	Step string `json:"step"`
	Op   string `json:"op,omitempty"`
	// Depth is the child's: 1 under a top-level run (0 in records written
	// before it was kept, which count as 1).
	Depth int `json:"depth,omitempty"`
}

// MaxDepth bounds how deep runs start runs (child steps, a function's
// Invoke): a recursion that does not end fails the step that would go
// deeper, instead of starting runs without end.
const MaxDepth = 32

// Under is the link of a run that step (operation op) of run starts;
// parent is run's own link (nil for a top-level run).
func Under(run string, parent *Parent, step, op string) Parent {
	depth := 1
	if parent != nil {
		depth = max(parent.Depth, 1) + 1
	}
	return Parent{Run: run, Step: step, Op: op, Depth: depth}
}

// TooDeep refuses a link deeper than MaxDepth.
func (p Parent) TooDeep() error {
	if p.Depth > MaxDepth {
		return fmt.Errorf("it would be %d runs deep, over the limit of %d (a recursion that does not end?)", p.Depth, MaxDepth)
	}
	return nil
}

// ChildKey is the idempotency key of the child run of attempt of a child
// step: however often its start is repeated, it admits one child.
func ChildKey(run, step string, attempt int) string {
	return "child:" + run + ":" + step + ":" + strconv.Itoa(attempt)
}

// InvokeKey is the idempotency key of the run a function step invoked
// for operation op.
func InvokeKey(run, step, op string) string { return "invoke:" + run + ":" + step + ":" + op }

// ChildError is why a child run that did not complete (id, ended with
// status and err) fails its parent.
func ChildError(id string, status cairn.RunStatus, err *cairn.ErrorInfo) *cairn.ErrorInfo {
	why := cairn.ErrorInfo{Class: cairn.ClassFatal, Message: "child run " + id + " " + string(status)}
	if err != nil {
		why.Class = err.Class
		why.Message = fmt.Sprintf("child run %s %s: %s", id, status, err.Message)
	}
	return &why
}

// EndedIn reports whether the journal entries one commit added end a run
// whose status is now status.
func EndedIn(status cairn.RunStatus, added []cairn.JournalEntry) bool {
	for _, j := range added {
		if cairn.JournalRunEnded(status) == j.Type {
			return true
		}
	}
	return false
}

// Cancel cancels a run for reason; a run that ended already is a
// *errs.ConflictError, which following a link takes as done.
type Cancel func(ctx context.Context, run, reason string) (*cairn.Run, error)

// endedReason is why a child run is cancelled: its parent ended.
func endedReason(parent string, status cairn.RunStatus) string {
	return "parent run " + parent + " ended (" + string(status) + ")"
}

func conflict(err error) bool {
	var c *errs.ConflictError
	return errors.As(err, &c)
}

// Ended is a run one commit ended, as its links see it.
type Ended struct {
	ID       string
	Status   cairn.RunStatus
	Parent   *Parent  // nil: no parent
	Children []string // the running child runs its end cancelled
}

// AfterEnd does what the commit that ended r asks of this instance, in
// the background (spawn; bounded by timeout): apply the end to the
// parent (toParent), cancel the running children. A failure is logged:
// the reaper's visits are the fallback.
func AfterEnd(spawn func(func()), timeout time.Duration, log *slog.Logger, r Ended, toParent func(context.Context) error, cancel Cancel) {
	if r.Parent == nil && len(r.Children) == 0 {
		return
	}
	spawn(func() {
		ctx, stop := context.WithTimeout(context.Background(), timeout)
		defer stop()
		if r.Parent != nil {
			if err := toParent(ctx); err != nil {
				log.Warn("child: applying the child's end to its parent failed; the reaper applies it", "run", r.ID, "parent", r.Parent.Run, "err", err)
			}
		}
		for _, id := range r.Children {
			if _, err := cancel(ctx, id, endedReason(r.ID, r.Status)); err != nil && !conflict(err) {
				log.Warn("child: cancelling a child run failed; it cancels itself when the reaper visits it", "run", id, "parent", r.ID, "err", err)
			}
		}
	})
}

// CheckParent cancels run, a running child of parent, when its parent
// ended (the fallback of the cancel the parent's instance sends: the
// reaper calls it when it visits a run with a parent). A parent that is
// not found is left alone.
func CheckParent(ctx context.Context, run, parent string, state func(ctx context.Context, run string) (string, cairn.RunStatus, error), cancel Cancel) error {
	_, status, err := state(ctx, parent)
	if errs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !status.Terminal() {
		return nil
	}
	if _, err := cancel(ctx, run, endedReason(parent, status)); err != nil && !conflict(err) {
		return err
	}
	return nil
}
