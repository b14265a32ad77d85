// Package link is the bookkeeping of the links between runs: a child run's
// link to its parent (a child step, or a function's invoke), how deep runs
// nest, the idempotency keys that admit one child per attempt or
// operation, and what a child's end says to its parent. What a link does
// to either run is the engine's (engine/child.go).
package link

import (
	"fmt"
	"strconv"

	"github.com/cairn-dev/cairn"
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
