// Package history keeps a function step's history: the operations its
// body checkpointed, in order (docs/FUNCTIONS.md). It decides what a
// checkpoint adds — append-only, continuous, bounded — and nothing else:
// it reads and writes no store.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cairn-dev/cairn"
)

// Limits bounds a history.
type Limits struct {
	// Operations is the most operations a history holds.
	Operations int
	// ResultBytes is the largest result one operation records.
	ResultBytes int
	// Bytes is the most bytes of results and errors a history holds.
	Bytes int
}

// ErrChanged is a checkpoint made on a history that changed under it: the
// engine recorded an operation's outcome (an event a wait got) at the
// position where the driver, replaying without it, recorded another.
var ErrChanged = errors.New("the engine recorded an operation's outcome the driver did not see")

// FieldError is a checkpoint the history refuses, naming the field at
// fault ("operations[3].seq").
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Append returns the operations of ops that hist does not hold yet, each
// stamped at now, after checking that ops continue hist: each one's seq is
// the next position, or a position hist already holds with the same id,
// kind and status (a checkpoint sent again after a lost answer adds
// nothing). It refuses an operation that is malformed or that would take
// the history past lim.
func Append(hist, ops []cairn.Operation, now time.Time, lim Limits) ([]cairn.Operation, error) {
	bytes := Size(hist)
	next := len(hist)
	var added []cairn.Operation
	for i, op := range ops {
		field := func(f string) string { return fmt.Sprintf("operations[%d]%s", i, f) }
		if err := check(op, lim, field); err != nil {
			return nil, err
		}
		if op.Seq < len(hist) {
			h := hist[op.Seq]
			if engineOutcome(h) && (h.ID != op.ID || h.Status != op.Status) {
				return nil, fmt.Errorf("%w: %s %q at %d", ErrChanged, h.Kind, h.ID, op.Seq)
			}
			if h.ID != op.ID || h.Kind != op.Kind || h.Status != op.Status {
				return nil, &FieldError{field(".seq"), fmt.Sprintf("position %d of the history holds %s %q (%s), not %s %q (%s)", op.Seq, h.Kind, h.ID, h.Status, op.Kind, op.ID, op.Status)}
			}
			continue
		}
		if op.Seq != next {
			return nil, &FieldError{field(".seq"), fmt.Sprintf("is %d; the history continues at %d", op.Seq, next)}
		}
		if next >= lim.Operations {
			return nil, &FieldError{"operations", fmt.Sprintf("the history would hold over %d operations, its limit: continue the work in a new run", lim.Operations)}
		}
		bytes += opBytes(op)
		if bytes > lim.Bytes {
			return nil, &FieldError{"operations", fmt.Sprintf("the history's results would take over %d bytes, its limit: return large values by reference", lim.Bytes)}
		}
		op.At = now
		added = append(added, op)
		next++
	}
	return added, nil
}

// engineOutcome reports whether op may be one the engine recorded (an
// event a wait got, an invoked run's end), which a driver replaying an
// older history had not seen.
func engineOutcome(op cairn.Operation) bool {
	return (op.Kind == cairn.OpWait || op.Kind == cairn.OpInvoke) && op.Status != cairn.OpStarted
}

func check(op cairn.Operation, lim Limits, field func(string) string) error {
	switch {
	case op.ID == "" || len(op.ID) > 512 || !utf8.ValidString(op.ID):
		return &FieldError{field(".id"), "must be 1 to 512 bytes of UTF-8"}
	case !slices.Contains(op.Kind.Values(), op.Kind):
		return &FieldError{field(".kind"), fmt.Sprintf("unknown operation kind %q", op.Kind)}
	case !slices.Contains(op.Status.Values(), op.Status):
		return &FieldError{field(".status"), fmt.Sprintf("unknown operation status %q", op.Status)}
	case op.Seq < 0:
		return &FieldError{field(".seq"), "must not be negative"}
	case len(op.Result) > lim.ResultBytes:
		return &FieldError{field(".result"), fmt.Sprintf("%d bytes, over the %d-byte limit", len(op.Result), lim.ResultBytes)}
	case len(op.Result) > 0 && !json.Valid(op.Result):
		return &FieldError{field(".result"), "not valid JSON"}
	case op.Status == cairn.OpFailed && op.Error == nil:
		return &FieldError{field(".error"), "a failed operation needs its error"}
	case op.Kind == cairn.OpSleep && op.WakeAt == nil:
		return &FieldError{field(".wake_at"), "a sleep needs its end"}
	}
	if e := op.Error; e != nil {
		switch {
		case len(e.Message) > 16<<10:
			return &FieldError{field(".error.message"), "over 16 KiB"}
		case len(e.Class) > 128:
			return &FieldError{field(".error.class"), "over 128 bytes"}
		case e.Step != "":
			return &FieldError{field(".error.step"), "names a run's failed step; an operation's error has none"}
		}
	}
	return nil
}

// Outcome is the engine's record of how operation id (a wait, an
// invoke) at position seq ended: completed with result (null when
// empty), or failed with why.
func Outcome(id string, seq int, kind cairn.OperationKind, result json.RawMessage, why *cairn.ErrorInfo, now time.Time) cairn.Operation {
	op := cairn.Operation{ID: id, Seq: seq, Kind: kind, Status: cairn.OpCompleted, Result: result, Error: why, At: now}
	if why != nil {
		op.Status = cairn.OpFailed
	} else if len(op.Result) == 0 {
		op.Result = json.RawMessage("null")
	}
	return op
}

// Ended reports whether hist records the outcome of operation id
// (completed or failed).
func Ended(hist []cairn.Operation, id string) bool {
	for _, op := range hist {
		if op.ID == id && op.Status != cairn.OpStarted {
			return true
		}
	}
	return false
}

// Holds reports whether the history's last operation id is of kind
// (the operation a suspension waits for must be).
func Holds(hist []cairn.Operation, id string, kind cairn.OperationKind) bool {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].ID == id {
			return hist[i].Kind == kind
		}
	}
	return false
}

// Resumable is the part of a function's history a rerun starts from: the
// operations before the first one that failed or that started without an
// outcome (an at_most_once step, a wait, an invoke), so the new run
// replays what succeeded and runs the rest again.
func Resumable(hist []cairn.Operation) []cairn.Operation {
	k := len(hist)
	for i, op := range hist {
		if op.Status == cairn.OpFailed || op.Status == cairn.OpStarted && !Ended(hist[i:], op.ID) {
			k = i
			break
		}
	}
	// An operation started before the cut may end after it (branches
	// interleave): keep neither its start nor what follows.
	for changed := true; changed; {
		changed = false
		for i, op := range hist[:k] {
			if op.Status == cairn.OpStarted && !Ended(hist[i:k], op.ID) {
				k, changed = i, true
				break
			}
		}
	}
	return slices.Clone(hist[:k])
}

// Size is the bytes of results and errors hist holds.
func Size(hist []cairn.Operation) int {
	n := 0
	for _, op := range hist {
		n += opBytes(op)
	}
	return n
}

func opBytes(op cairn.Operation) int {
	n := len(op.ID) + len(op.Result)
	if op.Error != nil {
		n += len(op.Error.Class) + len(op.Error.Message)
	}
	return n
}
