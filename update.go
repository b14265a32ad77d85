package cairn

import (
	"encoding/json"
	"fmt"
	"time"
)

// Updates: a request sent to a live run that gets the run's answer
// (docs/DECISIONS.md, Updates). An update is delivered like an event of
// its name — a wait step, or a function's wait, takes it — and its answer
// is the output of the step the wait names (answer; the wait's own
// output, the update's input, when unset), or a function's reply.

// UpdateRequest sends an update to a run.
type UpdateRequest struct {
	ID     string          `json:"id,omitempty" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The update's id: a request sent again with the same id (and the same name and input) answers the same update, which the run got once; with another name or input it is a 409. Generated when empty (then a retry is a second update)."`
	Name   string          `json:"name" minLength:"1" maxLength:"128" pattern:"^[^\\x00-\\x1F\\x7F]*$" doc:"The update's name: the event name a wait step (or a function's wait) of the run waits for."`
	Input  json.RawMessage `json:"input,omitempty" doc:"Any JSON: the output of the wait step that takes it (the payload of an event)."`
	WaitMs int64           `json:"wait_ms,omitempty" minimum:"0" maximum:"3600000" doc:"Hold the request up to this long (capped at 4/5 of the max request time) for the answer; 0 answers at once. Answered 200 when the update is answered or failed, else 202 with the update to poll."`
}

// UpdateStatus is how far an update got.
type UpdateStatus string

// Update statuses.
const (
	// UpdateAccepted: delivered to the run, not answered yet.
	UpdateAccepted UpdateStatus = "accepted"
	// UpdateAnswered: the answer is in (answer).
	UpdateAnswered UpdateStatus = "answered"
	// UpdateFailed: it will not be answered (error says why): the step
	// that answers failed or was skipped, or the run ended first.
	UpdateFailed UpdateStatus = "failed"
)

// Values lists every update status (the API's enum).
func (UpdateStatus) Values() []UpdateStatus {
	return []UpdateStatus{UpdateAccepted, UpdateAnswered, UpdateFailed}
}

// Update is an update sent to a run, and its answer once it is in.
type Update struct {
	ID         string          `json:"id" doc:"The update's id."`
	Run        string          `json:"run" doc:"The run it was sent to."`
	Name       string          `json:"name" doc:"Its name."`
	Status     UpdateStatus    `json:"status"`
	Step       string          `json:"step,omitempty" doc:"The step that took it: a wait step, or a function step. Empty while no step has."`
	Answer     json.RawMessage `json:"answer,omitempty" doc:"When answered: the output of the step the wait's answer names (the wait's own when unset), or what the function replied. A value over the inline limit is a payload reference, as outputs are."`
	Error      *ErrorInfo      `json:"error,omitempty" doc:"When failed: why it will not be answered."`
	AcceptedAt time.Time       `json:"accepted_at" doc:"When the run got it."`
}

// Done reports whether the update will not change any more.
func (u *Update) Done() bool { return u.Status != UpdateAccepted }

// checkAnswers checks each wait's answer: a step that comes after the
// wait, so that its output can answer an update the wait took.
func (w *Workflow) checkAnswers(index map[string]int, add func(field, format string, args ...any)) {
	for i, s := range w.Steps {
		if s.Answer == "" || s.Answer == s.ID {
			continue
		}
		if _, ok := index[s.Answer]; !ok || !w.comesAfter(s.Answer, s.ID, map[string]bool{}) {
			add(fmt.Sprintf(".steps[%d].answer", i), "names no step that comes after wait %q (through after)", s.ID)
		}
	}
}

// comesAfter reports whether step depends on step on, directly or not.
func (w *Workflow) comesAfter(step, on string, seen map[string]bool) bool {
	if seen[step] {
		return false
	}
	seen[step] = true
	s := w.Step(step)
	if s == nil {
		return false
	}
	for _, a := range s.After {
		if a == on || w.comesAfter(a, on, seen) {
			return true
		}
	}
	return false
}
