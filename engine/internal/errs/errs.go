// Package errs holds the engine's typed errors, so that the engine's
// internal mechanisms answer with the same types the API maps to status
// codes (the engine re-exports each under its own name).
package errs

import (
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
)

// NotFoundError: the named thing does not exist.
type NotFoundError struct {
	What string // "run", "workflow", "worker", "lease", "payload"
	ID   string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q not found", e.What, e.ID) }

// IsNotFound reports whether err is a NotFoundError.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

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

// Unavailable wraps a store error a retry may cure as UnavailableError;
// any other error is returned as is.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	if blob.IsRetryable(err) {
		return &UnavailableError{Err: err}
	}
	return err
}

// InternalError: a bug on the server's side (a recovered panic, an
// object whose content its name does not confirm). The request fails
// with a 500; nothing of it was applied.
type InternalError struct{ Message string }

func (e *InternalError) Error() string { return e.Message }

// Reject is a worker-protocol rejection.
func Reject(reason cairn.Reason, format string, args ...any) error {
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

// ErrCorrupt marks a stored object that does not decode: reading it again
// does not help.
var ErrCorrupt = errors.New("stored object is corrupt")

// Public is what a client may hear of err: the message of errors the
// client caused (not found, invalid), else "".
func Public(err error) string {
	var (
		nf  *NotFoundError
		inv *InvalidError
	)
	switch {
	case errors.As(err, &nf):
		return nf.Error()
	case errors.As(err, &inv):
		return inv.Error()
	}
	return ""
}
