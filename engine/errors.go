package engine

import (
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn"
)

// NotFoundError: the named thing does not exist.
type NotFoundError struct {
	What string // "run", "workflow", "worker", "lease"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// ConflictError: the request contradicts stored state (other than the
// worker protocol's rejections), e.g. a definition registered again with
// other content.
type ConflictError struct{ Message string }

func (e *ConflictError) Error() string { return e.Message }

// InvalidError: the request is malformed in a way the schema cannot say
// (a bad lease id, a template that does not compile). Field names it.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// UnavailableError: the store refused for now (throttled, a conflicting
// concurrent write that did not settle). Nothing was applied; retry.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "store busy, retry: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

func reject(reason cairn.Reason, format string, args ...any) error {
	return &cairn.Rejection{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// IsRejection reports whether err is a worker-protocol rejection and
// returns its reason.
func IsRejection(err error) (cairn.Reason, bool) {
	var r *cairn.Rejection
	if errors.As(err, &r) {
		return r.Reason, true
	}
	return "", false
}

// InternalError: a bug on the server's side (a recovered panic). The
// request fails with a 500; nothing of it was applied.
type InternalError struct{ Message string }

func (e *InternalError) Error() string { return e.Message }
