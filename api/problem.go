package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
)

// Problem is every error the API returns: RFC 9457 problem details, plus
// the worker protocol's reason on a 409.
type Problem struct {
	huma.ErrorModel
	Reason cairn.Reason `json:"reason,omitempty" doc:"On a 409 to a worker call: why the call was refused. SDKs branch on it."`
	// headers are extra response headers (Retry-After, WWW-Authenticate).
	headers http.Header
}

// GetHeaders makes Huma send the problem's headers.
func (p *Problem) GetHeaders() http.Header { return p.headers }

// ContentType makes Huma send problem+json.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// bodyUnreadable is what Huma says, as a 500, when reading a request body
// fails: a truncated body (the client stopped sending, a broken chunked
// encoding). That is the request's fault, so it is answered as a 400.
const bodyUnreadable = "cannot read request body"

func init() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		if status == http.StatusInternalServerError && msg == bodyUnreadable {
			status, msg = http.StatusBadRequest, "the request body could not be read; was it cut short?"
		}
		p := problem(status, msg)
		for _, err := range errs {
			if err == nil {
				continue
			}
			if d, ok := err.(huma.ErrorDetailer); ok {
				p.Errors = append(p.Errors, d.ErrorDetail())
			} else {
				p.Errors = append(p.Errors, &huma.ErrorDetail{Message: err.Error()})
			}
		}
		return p
	}
}

// ProblemType is every problem's type: cairn defines no problem types of
// its own (a 409's reason says which refusal it is), and RFC 9457 reads
// about:blank as "the status code says it all". It is always sent, so the
// spec can require it.
const ProblemType = "about:blank"

func problem(status int, detail string) *Problem {
	return &Problem{ErrorModel: huma.ErrorModel{Type: ProblemType, Status: status, Title: http.StatusText(status), Detail: detail}}
}

// toProblem maps an engine error to its HTTP problem. Errors it does not
// know are 500s whose detail says only that something failed: the cause
// goes to the log, never to the client. params locates the operation's
// path and query parameters (see paramLocations).
func (a *API) toProblem(ctx context.Context, err error, params map[string]string) error {
	if err == nil {
		return nil
	}
	var (
		rej   *cairn.Rejection
		nf    *engine.NotFoundError
		conf  *engine.ConflictError
		inv   *engine.InvalidError
		val   cairn.ValidationError
		fe    *cairn.FieldError
		unav  *engine.UnavailableError
		berr  *blob.Error
		statu huma.StatusError
	)
	switch {
	case errors.As(err, &rej):
		p := problem(http.StatusConflict, rej.Message)
		p.Reason = rej.Reason
		noteReason(ctx, string(rej.Reason))
		p.Title = "Refused: " + string(rej.Reason)
		return p
	case errors.As(err, &nf):
		return problem(http.StatusNotFound, nf.Error())
	case errors.As(err, &conf):
		return problem(http.StatusConflict, conf.Message)
	case errors.As(err, &inv):
		p := problem(http.StatusUnprocessableEntity, inv.Error())
		p.Errors = []*huma.ErrorDetail{{Message: inv.Message, Location: location(inv.Field, params)}}
		return p
	case errors.As(err, &val):
		p := problem(http.StatusUnprocessableEntity, "validation failed: "+val.Error())
		for _, f := range val {
			p.Errors = append(p.Errors, &huma.ErrorDetail{Message: f.Message, Location: location(f.Field, params)})
		}
		return p
	case errors.As(err, &fe):
		p := problem(http.StatusUnprocessableEntity, "validation failed: "+fe.Error())
		p.Errors = []*huma.ErrorDetail{{Message: fe.Message, Location: location(fe.Field, params)}}
		return p
	case errors.As(err, &unav), blob.IsRetryable(err), errors.Is(err, blob.ErrPreconditionFailed):
		// A conditional write that kept losing is contention, not a
		// failure: nothing was applied, and a retry will settle it.
		p := problem(http.StatusServiceUnavailable, "the store is busy; nothing was applied, retry shortly")
		p.headers = http.Header{"Retry-After": {"1"}}
		return p
	case errors.As(err, &statu):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		p := problem(http.StatusServiceUnavailable, "the request was cancelled or ran out of time before it finished; retry")
		// An answer that reaches the client means its connection lives on,
		// but net/http derives each request's context from its
		// connection's, and once that is cancelled (a read error it saw
		// in the background) every later request on the connection would
		// be born cancelled: the client's retry must come on a new one.
		p.headers = http.Header{"Retry-After": {"1"}, "Connection": {"close"}}
		return p
	}
	if errors.As(err, &berr) {
		if p := a.clientStoreError(ctx, berr); p != nil {
			return p
		}
		if storeUnreachable(err) {
			// Nothing reached the store, so nothing was applied: the
			// client may retry as it would after throttling.
			a.unreachable.unreachable(ctx, a.log, berr.Op, berr.Err)
			p := problem(http.StatusServiceUnavailable, "the store is unreachable; nothing was applied, retry shortly")
			p.headers = http.Header{"Retry-After": {"1"}}
			return p
		}
		a.log.ErrorContext(ctx, "store error", "op", berr.Op, "key", berr.Key, "err", berr.Err)
		p := problem(http.StatusBadGateway, "the object store failed ("+berr.Op+"); nothing may have been applied, retry")
		return p
	}
	a.log.ErrorContext(ctx, "internal error", "err", err)
	return problem(http.StatusInternalServerError, "internal error; see the server log")
}

// clientStoreError answers the store errors the request caused, or
// returns nil. The engine checks ids before they reach the store, so
// these are what slips past (an edited lease id naming a key no object
// can have); a 502 would tell the client to retry a request that can
// never succeed.
func (a *API) clientStoreError(ctx context.Context, berr *blob.Error) *Problem {
	switch {
	case errors.Is(berr, blob.ErrInvalidArgument):
		// Logged: were it the engine's own mistake, someone should see it.
		a.log.WarnContext(ctx, "store refused a key or argument", "op", berr.Op, "key", berr.Key, "err", berr.Err)
		if berr.Op == "get" || berr.Op == "stat" {
			return problem(http.StatusNotFound, "not found: the request names an id no stored object can have")
		}
		return problem(http.StatusBadRequest, "the request names an id no stored object can have")
	case errors.Is(berr, blob.ErrNotFound):
		return problem(http.StatusNotFound, "not found: something the request names does not exist")
	}
	return nil
}

// location turns an engine field path into a Huma error location: a
// parameter of the operation where it has one of that name, else a body
// field.
func location(field string, params map[string]string) string {
	if loc, ok := params[field]; ok {
		return loc
	}
	if field == "" || strings.HasPrefix(field, "body") || strings.HasPrefix(field, "path") || strings.HasPrefix(field, "query") {
		return field
	}
	if field == "lease" {
		return "path.lease"
	}
	return "body." + field
}

// storeUnreachable reports whether err says the request never reached the
// store: the connection was refused, the host or network unreachable, or
// the name did not resolve. (A reset or a timeout may have sent the
// request; those stay 502.)
func storeUnreachable(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.As(err, &dns)
}

// TransformSchema makes Problem's schema say what the server sends
// (Huma's ErrorModel cannot carry the tags): type, title and status are
// always there; errors, when present, is an array, never null.
func (*Problem) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	if e := s.Properties["errors"]; e != nil {
		e.Nullable = false
	}
	if t := s.Properties["type"]; t != nil {
		t.Examples = []any{ProblemType}
	}
	s.Required = []string{"type", "title", "status"}
	return s
}
