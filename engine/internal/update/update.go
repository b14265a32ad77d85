// Package update keeps a run's updates: requests sent to a live run that
// get the run's answer (docs/DECISIONS.md, Updates).
//
// An update is delivered as an event of its name: the wait step or the
// function's wait that takes it is recorded in the run's log (Took). Its
// answer is not stored: it is read from the run record when asked (View)
// — the output of the step the wait's answer names (the wait's own when
// unset), or the function's reply operation for the update — so the
// commits that answer it are the run's own, and cost nothing more.
package update

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/trigger"
)

// Max is how many updates one run's record keeps.
const Max = 1000

// Record is an update a run got, as its record keeps it.
type Record struct {
	ID   string    `json:"id"`
	Name string    `json:"name"`
	Sum  string    `json:"sum"` // of name and input: a retry with another body is refused
	At   time.Time `json:"at"`
	Step string    `json:"step,omitempty"` // the step that took it
}

// Log is a run's updates, oldest first.
type Log []Record

// Find returns the update of id, or nil.
func (l Log) Find(id string) *Record {
	for i := range l {
		if l[i].ID == id {
			return &l[i]
		}
	}
	return nil
}

// Took records that step took the update of id ("": an event, not an
// update; nothing is recorded).
func (l Log) Took(id, step string) {
	if r := l.Find(id); id != "" && r != nil && r.Step == "" {
		r.Step = step
	}
}

// Sum tells a request sent again from another one with the same id: the
// same name and the same input, whatever its spacing.
func Sum(name string, input json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		b.Reset()
		b.Write(input)
	}
	h := sha256.Sum256(append([]byte(name+"\x00"), b.Bytes()...))
	return hex.EncodeToString(h[:16])
}

// Check validates a request's fields and gives it an id when it has none.
func Check(req *cairn.UpdateRequest, maxInput int, newID func() string) error {
	if err := trigger.CheckEvent(req.Name, req.ID, req.Input, "input", maxInput); err != nil {
		return err
	}
	if req.WaitMs < 0 {
		return cairn.ValidationError{{Field: "wait_ms", Message: "must not be negative"}}
	}
	req.ID = cmp.Or(req.ID, newID())
	return nil
}

// Again answers a request whose id r already has: nil when it is the
// same request (the same update, delivered once), else a conflict.
func (r *Record) Again(name, sum string) error {
	if r.Name == name && r.Sum == sum {
		return nil
	}
	return &errs.ConflictError{Message: fmt.Sprintf("update %s was sent before with another name or input", r.ID)}
}

// Step is one step of a run: as its definition declares it, and as the
// run's record holds it (Def nil: no such step).
type Step struct {
	Def    *cairn.Step
	Status cairn.StepStatus
	Output json.RawMessage
	Error  *cairn.ErrorInfo
	Ops    []cairn.Operation
}

// Run is what an update is decided on.
type Run struct {
	ID     string
	Status cairn.RunStatus
	Steps  []cairn.Step         // the definition's, in order
	State  func(id string) Step // one step's
}

// Accepts returns nil when a step of the run may still take an update
// named name — a wait for it, or a function step, that has not ended —
// and the run, which got n updates, may get one more; otherwise the
// error its caller gets.
func (run Run) Accepts(name string, n int) error {
	if n >= Max {
		return &errs.ConflictError{Message: fmt.Sprintf("run %s already got %d updates", run.ID, n)}
	}
	if run.taker(name) {
		return nil
	}
	return cairn.ValidationError{{Field: "name", Message: fmt.Sprintf("no wait step (or function) of run %s is left to take update %q", run.ID, name)}}
}

func (run Run) taker(name string) bool {
	for i := range run.Steps {
		s := &run.Steps[i]
		k := s.EffectiveKind()
		if k != cairn.KindWait && k != cairn.KindFunction || run.State(s.ID).Status.Done() {
			continue
		}
		if k == cairn.KindFunction || slices.Contains(s.WaitEvents(), name) {
			return true
		}
	}
	return false
}

// Find is the update of id in log as the run answers it now.
func (run Run) Find(log Log, id string) (*cairn.Update, error) {
	if rec := log.Find(id); rec != nil {
		return run.View(*rec), nil
	}
	return nil, &errs.NotFoundError{What: "update", ID: id}
}

// View is update rec as the run answers it now.
func (run Run) View(rec Record) *cairn.Update {
	u := &cairn.Update{ID: rec.ID, Run: run.ID, Name: rec.Name, Status: cairn.UpdateAccepted, Step: rec.Step, AcceptedAt: rec.At}
	switch {
	case rec.Step != "":
		run.answer(u)
	case !run.Status.Terminal() && !run.taker(rec.Name):
		failed(u, nil, "no wait is left to take it")
	}
	if !u.Done() && run.Status.Terminal() {
		failed(u, nil, fmt.Sprintf("the run ended (%s) before it was answered", run.Status))
	}
	return u
}

// answer fills in the answer of u, which step u.Step took, once it is in.
func (run Run) answer(u *cairn.Update) {
	st := run.State(u.Step)
	if st.Def == nil {
		failed(u, nil, "step "+u.Step+" is not in the run's definition")
		return
	}
	if st.Def.EffectiveKind() == cairn.KindFunction {
		for _, op := range st.Ops {
			if op.Kind == cairn.OpReply && op.Update == u.ID && op.Status != cairn.OpStarted {
				u.Status, u.Answer, u.Error = cairn.UpdateAnswered, op.Result, op.Error
				if op.Status == cairn.OpFailed {
					u.Status = cairn.UpdateFailed
				}
				return
			}
		}
		if st.Status.Done() {
			failed(u, st.Error, "function step "+u.Step+" ended without replying")
		}
		return
	}
	id := cmp.Or(st.Def.Answer, st.Def.ID)
	switch a := run.State(id); {
	case a.Status == cairn.StepCompleted:
		u.Status, u.Answer = cairn.UpdateAnswered, a.Output
	case a.Status.Done():
		failed(u, a.Error, fmt.Sprintf("step %s, whose output answers, was %s", id, a.Status))
	}
}

// failed marks u failed with why, or a message when why is nil.
func failed(u *cairn.Update, why *cairn.ErrorInfo, message string) {
	u.Status, u.Error = cairn.UpdateFailed, why
	if why == nil {
		u.Error = &cairn.ErrorInfo{Class: cairn.ClassFatal, Message: message}
	}
}
