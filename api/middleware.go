package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"runtime/debug"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The http.Handler middlewares around the ServeMux: what happens before an
// operation is found or after it panicked, where Huma cannot answer.

// writeProblem answers with p as problem JSON, outside Huma.
func writeProblem(w http.ResponseWriter, p *Problem) {
	for k, vs := range p.headers {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// recoverPanics answers a request whose handler panicked with a 500
// problem and logs the panic with its stack. Only that request fails: the
// process, and every other request, carry on. (net/http would also
// survive, but answers nothing; on Lambda a panic ends the process.)
func (a *API) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &startedWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			a.log.ErrorContext(r.Context(), "panic serving a request; answered 500",
				"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if tw.started {
				// Part of an answer is out: it cannot be replaced. The
				// client sees it cut short.
				return
			}
			writeProblem(w, problem(http.StatusInternalServerError, "internal error; see the server log"))
		}()
		next.ServeHTTP(tw, r)
	})
}

// startedWriter records whether a response has started.
type startedWriter struct {
	http.ResponseWriter
	started bool
}

func (w *startedWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx are interim: the answer is still to come
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *startedWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *startedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// routeProblems answers in problem JSON what the ServeMux would answer in
// plain text or with a redirect:
//
//   - a path with an empty, "." or ".." segment. The mux would redirect
//     it to the cleaned path, which names another resource (GET
//     /v1/api/runs/. would list runs). Where the odd segment stands for an
//     operation's parameter, that parameter is invalid: 422 naming it
//     (path.run). Otherwise 404.
//   - no operation at that path: 404; none for that method: 405 with Allow.
func (a *API) routeProblems(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := a.oddSegments(mux, r); p != nil {
			writeProblem(w, p)
			return
		}
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// The mux's own 404 or 405 handler: run it for its status and
		// Allow header only.
		rec := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		p := problem(http.StatusNotFound, "no operation at "+r.URL.Path+"; see /openapi.json")
		if rec.status == http.StatusMethodNotAllowed {
			p = problem(http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+rec.header.Get("Allow"))
			p.headers = http.Header{"Allow": {rec.header.Get("Allow")}}
		}
		writeProblem(w, p)
	})
}

// oddSegments returns the problem for a path the mux would clean, or nil.
func (a *API) oddSegments(mux *http.ServeMux, r *http.Request) *Problem {
	p := r.URL.EscapedPath()
	if p == cleanPath(p) {
		return nil
	}
	// Fill each odd segment in and look for the operation: its pattern
	// names the parameter that stands there.
	segs := strings.Split(p, "/")
	var odd []int
	for i, s := range segs {
		last := i == len(segs)-1
		if i > 0 && (s == "." || s == ".." || s == "" && !last) {
			segs[i], odd = "_", append(odd, i)
		}
	}
	bad := problem(http.StatusNotFound, "no operation at this path: it has an empty, \".\" or \"..\" segment")
	if len(odd) == 0 {
		return bad
	}
	filled := r.Clone(r.Context())
	filled.URL.Path, filled.URL.RawPath = strings.Join(segs, "/"), ""
	_, pattern := mux.Handler(filled) // "GET /v1/api/runs/{run}", or "" for none
	if _, route, ok := strings.Cut(pattern, " "); ok {
		pattern = route
	}
	parts := strings.Split(pattern, "/")
	var details []*huma.ErrorDetail
	for _, i := range odd {
		if i >= len(parts) || !strings.HasPrefix(parts[i], "{") {
			return bad
		}
		name := strings.Trim(parts[i], "{}.")
		details = append(details, &huma.ErrorDetail{Location: "path." + name, Message: "must not be empty, \".\" or \"..\""})
	}
	v := problem(http.StatusUnprocessableEntity, "validation failed")
	v.Errors = details
	return v
}

// cleanPath is the form ServeMux routes: path.Clean, keeping a trailing
// slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// headerRecorder keeps a response's status and headers and drops its body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return len(b), nil
}
func (h *headerRecorder) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}
