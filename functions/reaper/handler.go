package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/internal/serve"
)

// reapPaths are the paths a pass is run at over HTTP.
var reapPaths = []string{"/reap", api.BasePath + "/reaper/run"}

// verifier checks OIDC ID tokens (oidc.go).
type verifier interface {
	// Verify returns who the token names, or an error: errTokenRejected
	// for a token that is not good enough, errKeysUnavailable when the
	// issuer's keys could not be fetched.
	Verify(ctx context.Context, raw string) (*Identity, error)
}

// Identity is what a verified token says about its caller.
type Identity struct {
	Email   string
	Subject string
}

var errTokenRejected = errors.New("token rejected")

// looksLikeJWT tells an ID token (three base64url parts) from an API key.
func looksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && strings.HasPrefix(s, "eyJ")
}

// newHandler is the reaper's HTTP handler. apiHandler authenticates API
// keys (and runs the pass) for requests that carry no OIDC token; v, if
// set, verifies those that do.
func newHandler(rp *serve.Reaper, apiHandler http.Handler, v verifier, dev bool, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	reap := func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case dev:
		case v != nil && looksLikeJWT(token):
			id, err := v.Verify(r.Context(), token)
			if err != nil {
				log.Warn("reaper: OIDC token refused", "err", err, "remote", r.RemoteAddr)
				status := http.StatusUnauthorized
				if !errors.Is(err, errTokenRejected) {
					status = http.StatusServiceUnavailable // could not fetch the keys
				}
				writeProblem(w, status, "a valid OIDC ID token or an admin API key is required")
				return
			}
			log.Debug("reaper: called", "by", id.Email)
		default:
			// An API key: package api checks it has the admin scope and
			// runs the pass itself.
			r2 := r.Clone(r.Context())
			r2.URL.Path = api.BasePath + "/reaper/run"
			r2.URL.RawPath = ""
			apiHandler.ServeHTTP(w, r2)
			return
		}
		st, err := rp.RunOnce(r.Context())
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, "reaper pass failed: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	}
	for _, p := range reapPaths {
		mux.HandleFunc("POST "+p, reap)
	}
	return mux
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}
