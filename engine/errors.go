package engine

import (
	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/errs"
)

// The engine's typed errors (engine/internal/errs), which the API maps to
// status codes.
type (
	// NotFoundError: the named thing does not exist.
	NotFoundError = errs.NotFoundError
	// ConflictError: the request contradicts stored state (other than
	// the worker protocol's rejections).
	ConflictError = errs.ConflictError
	// InvalidError: the request is malformed in a way the schema cannot
	// say. Field names it.
	InvalidError = errs.InvalidError
	// UnavailableError: the store refused for now; nothing was applied.
	UnavailableError = errs.UnavailableError
	// InternalError: a bug on the server's side; nothing was applied.
	InternalError = errs.InternalError
)

func reject(reason cairn.Reason, format string, args ...any) error {
	return errs.Reject(reason, format, args...)
}

// IsRejection reports whether err is a worker-protocol rejection and
// returns its reason.
func IsRejection(err error) (cairn.Reason, bool) { return errs.IsRejection(err) }
