package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// requestIDKey carries the request id in a request's context.
type requestIDKey struct{}

// callInfo is what later middlewares tell the access log (the key's id).
type callInfo struct{ key string }

type callInfoKey struct{}

// noteKey records the authenticated key's id for the access log.
func noteKey(ctx context.Context, id string) {
	if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
		ci.key = id
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
// refusal (409) at debug, since they are part of the protocol. Bodies and
// payloads are never logged.
func (a *API) accessLog(ctx huma.Context, next func(huma.Context)) {
	id := ctx.Header("X-Request-Id")
	if !validRequestID(id) {
		id = newRequestID()
	}
	ctx.SetHeader("X-Request-Id", id)
	ci := &callInfo{key: "anonymous"}
	ctx = huma.WithValue(huma.WithValue(ctx, requestIDKey{}, id), callInfoKey{}, ci)
	start := time.Now()
	next(ctx)
	op := ctx.Operation()
	status := ctx.Status()
	level := slog.LevelInfo
	if status == 409 {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("request_id", id),
		slog.String("op", op.OperationID),
		slog.String("method", op.Method),
		slog.String("route", op.Path),
		slog.Int("status", status),
		slog.Duration("took", time.Since(start).Round(time.Microsecond)),
		slog.String("key", ci.key),
	}
	if run := ctx.Param("run"); run != "" {
		attrs = append(attrs, slog.String("run", run))
	}
	a.log.LogAttrs(ctx.Context(), level, "api call", attrs...)
}
