package payload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// Values are the fields of a run record that hold values by reference:
// its input, its state and its steps' outputs and operation results. They
// point into the record, so Store's methods change it in place.
type Values struct {
	Run   string
	Input *json.RawMessage
	State map[string]json.RawMessage
	Steps []StepValues
}

// StepValues are one step's values in a run record.
type StepValues struct {
	ID        string
	Output    *json.RawMessage
	Ops       []cairn.Operation // shares the record's array: changed in place
	Completed bool              // only a completed step's output is resolved
}

// CheckSize refuses a payload over max bytes, naming field.
func CheckSize(field string, raw json.RawMessage, max int) error {
	if len(raw) > max {
		return cairn.ValidationError{{Field: field, Message: fmt.Sprintf("%d bytes, over the %d-byte limit of one payload", len(raw), max)}}
	}
	return nil
}

// ExternalizeStart stores a new run's input and state values by
// reference where they must be (under the new run's id, before its
// record is created), checking each against the per-payload limit, max
// bytes.
func (s *Store) ExternalizeStart(ctx context.Context, v Values, max int) error {
	for k, raw := range v.State {
		if len(raw) == 0 || !json.Valid(raw) {
			return cairn.ValidationError{{Field: "state." + k, Message: "not valid JSON"}}
		}
		if err := CheckSize("state."+k, raw, max); err != nil {
			return err
		}
	}
	in, err := s.Externalize(ctx, v.Run, *v.Input)
	if err != nil {
		return err
	}
	*v.Input = in
	if err := s.ExternalizeMap(ctx, v.Run, v.State); err != nil {
		return err
	}
	for _, st := range v.Steps { // a rerun's reused outputs and operations
		if out, err := s.Externalize(ctx, v.Run, *st.Output); err != nil {
			return err
		} else {
			*st.Output = out
		}
		if err := s.ExternalizeOps(ctx, v.Run, st.Ops, max); err != nil {
			return err
		}
	}
	return nil
}

// ResolveRecord replaces the references of a record's input, state and
// the outputs of its completed steps (but those in skip) by their values,
// for a rerun that copies them into a new run.
func (s *Store) ResolveRecord(ctx context.Context, v Values, skip map[string]bool) error {
	var err error
	if *v.Input, err = s.Resolve(ctx, v.Run, *v.Input, nil); err != nil {
		return err
	}
	for k, raw := range v.State {
		if v.State[k], err = s.Resolve(ctx, v.Run, raw, nil); err != nil {
			return err
		}
	}
	for _, st := range v.Steps {
		if skip[st.ID] {
			continue
		}
		for i := range st.Ops { // a function's history, which a rerun resumes
			if st.Ops[i].Result, err = s.Resolve(ctx, v.Run, st.Ops[i].Result, nil); err != nil {
				return err
			}
		}
		if !st.Completed {
			continue
		}
		if *st.Output, err = s.Resolve(ctx, v.Run, *st.Output, nil); err != nil {
			return err
		}
	}
	return nil
}

// readTimeout bounds payload reads made inside a run mutation (a when
// condition that names an output by reference).
const readTimeout = 10 * time.Second

// Resolver is a render's Resolve: it reads the references of run, at
// most limit bytes in all. ctx nil: a render inside a run mutation,
// bounded by its own timeout.
func (s *Store) Resolver(ctx context.Context, run string, limit int) func(json.RawMessage) (json.RawMessage, error) {
	budget := NewBudget(limit)
	return func(raw json.RawMessage) (json.RawMessage, error) {
		c := ctx
		if c == nil {
			var cancel context.CancelFunc
			c, cancel = context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
		}
		b, err := s.Resolve(c, run, raw, budget)
		var (
			nf   *errs.NotFoundError
			big  *TooLargeError
			corr *errs.InternalError
		)
		if err != nil && !errors.As(err, &nf) && !errors.As(err, &big) && !errors.As(err, &corr) {
			err = &ReadError{err}
		}
		return b, err
	}
}

// ReadError: a payload could not be read for now (the store failed). A
// claim answers it as a store error instead of failing the step's
// render.
type ReadError struct{ err error }

func (e *ReadError) Error() string { return "reading a payload: " + e.err.Error() }
func (e *ReadError) Unwrap() error { return e.err }

// IsReadError reports whether a render failed only because the store
// failed.
func IsReadError(err error) bool {
	var p *ReadError
	return errors.As(err, &p)
}

// Spilling applies a complete's or fail's mutation (apply), keeping the
// run record small: when the record is already large (over a quarter of
// its limit in this instance's copy), the output's and the patch's inline
// values of SpillMin bytes or more go by reference first; and when the
// mutation is refused as too large anyway (another instance grew the
// record), they go by reference and it is applied once more. So a wide
// fan-out of outputs under the inline limit (200 of 50 KB: 10 MB)
// completes with a record of about 2 MiB. The refusal costs no request:
// the committer measures the record before it writes.
func Spilling[T any](ctx context.Context, s *Store, run string, output *json.RawMessage, patch map[string]json.RawMessage,
	large bool, apply func() (T, error), tooLarge func(error) bool) (T, error) {
	var zero T
	if large {
		if _, err := s.Spill(ctx, run, output, patch); err != nil {
			return zero, err
		}
	}
	ended, err := apply()
	if err == nil || !tooLarge(err) {
		return ended, err
	}
	spilled, serr := s.Spill(ctx, run, output, patch)
	if serr != nil {
		return zero, serr
	}
	if !spilled {
		return ended, err
	}
	return apply()
}
