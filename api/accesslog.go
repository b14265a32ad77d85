package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/telemetry"
)

// requestIDKey carries the request id in a request's context.
type requestIDKey struct{}

// callInfo is what later middlewares and handlers tell the access log:
// the key's id, a refusal's reason, the leases a claim returned.
type callInfo struct {
	key    string
	reason string
	leases int
}

type callInfoKey struct{}

// noteKey records the authenticated key's id for the access log.
func noteKey(ctx context.Context, id string) {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.key = id
	}
}

// noteReason records a refused worker call's reason (a 409's).
func noteReason(ctx context.Context, r string) {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.reason = r
	}
}

// noteLeases records how many leases a claim returned.
func noteLeases(ctx context.Context, n int) {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.leases = n
	}
}

// RequestID returns the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// validRequestID accepts a caller's X-Request-Id when it is short and
// printable ASCII without spaces: it goes into logs as is.
func validRequestID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// accessLog is the first middleware: it gives the request an id (the
// caller's X-Request-Id when usable, else a new one), echoes it in the
// answer, and logs one line per call when the answer is sent — at info,
// with operation, method, path template, status, duration, the key's id
// (never the key) and the run, step or lease ids of the path; a worker's
// refusal (409) and the routine polls that succeed at debug (accessLevel).
// Bodies and payloads are never logged.
//
// With telemetry on it also opens the operation's server span (a child of
// the caller's traceparent; the engine's spans and the blob requests the
// call makes nest under it) and records the request metrics: duration by
// operation and status, 409s by reason, claims by result and hold time.
func (a *API) accessLog(ctx huma.Context, next func(huma.Context)) {
	id := ctx.Header("X-Request-Id")
	if !validRequestID(id) {
		id = newRequestID()
	}
	ctx.SetHeader("X-Request-Id", id)
	ci := &callInfo{key: "anonymous"}
	ctx = huma.WithValue(huma.WithValue(ctx, requestIDKey{}, id), callInfoKey{}, ci)
	op := ctx.Operation()
	tel := a.engine.Telemetry()
	sctx, span := tel.ServerSpan(ctx.Context(), ctx.Header, op.OperationID, op.Method, op.Path)
	if span != nil {
		ctx = huma.WithContext(ctx, sctx)
	}
	start := time.Now()
	next(ctx)
	took := time.Since(start)
	status := ctx.Status()
	if tel != nil {
		run, step, attempt := ctx.Param("run"), "", 0
		if lease := ctx.Param("lease"); lease != "" {
			if r, s, n, ok := engine.LeaseStep(lease); ok {
				run, step, attempt = r, s, n
			}
		}
		telemetry.EndServerSpan(span, status, run, step, attempt, ci.reason)
		tel.Request(op.OperationID, status, took, ci.reason)
		if op.OperationID == "claimSteps" {
			tel.Claimed(ci.leases, status >= 300, took)
		} else if ci.leases > 0 {
			tel.Granted(ci.leases) // a complete's eager dispatch (claim_next)
		}
	}
	level := accessLevel(op.OperationID, status, ci.leases)
	attrs := []slog.Attr{
		slog.String("request_id", id),
		slog.String("op", op.OperationID),
		slog.String("method", op.Method),
		slog.String("route", op.Path),
		slog.Int("status", status),
		slog.Duration("took", took.Round(time.Microsecond)),
		slog.String("key", ci.key),
	}
	if run := ctx.Param("run"); run != "" {
		attrs = append(attrs, slog.String("run", run))
	}
	if ci.reason != "" {
		attrs = append(attrs, slog.String("reason", ci.reason))
	}
	if span != nil {
		attrs = append(attrs, slog.String("trace_id", span.SpanContext().TraceID().String()))
	}
	a.log.LogAttrs(ctx.Context(), level, "api call", attrs...)
}

// routinePolls are the operations a client repeats while nothing happens:
// a successful one changes nothing worth a line at info (a status
// long-poll, a heartbeat, a health probe). A claim is one of them when it
// returns no lease.
var routinePolls = map[string]bool{
	"getRunStatus":   true,
	"heartbeatStep":  true,
	"heartbeatSteps": true,
	"health":         true,
	"ready":          true,
}

// accessLevel is the level of a call's access log line: debug for a
// worker's refusal (409, part of the protocol) and for a routine poll that
// succeeded (routinePolls, a claim that returned nothing), info for the
// rest — errors and calls that change state.
func accessLevel(op string, status, leases int) slog.Level {
	switch {
	case status == 409:
		return slog.LevelDebug
	case status >= 300:
		return slog.LevelInfo
	case routinePolls[op], op == "claimSteps" && leases == 0:
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
