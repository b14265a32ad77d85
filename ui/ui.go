// Package ui is cairn's dashboard: server-rendered pages over the engine
// the API reads (runs, a run with its graph and timeline, workers), served
// under /ui/ by the same stateless handler as the API. It keeps no state
// and starts nothing: every page is rendered from the bucket on request.
//
// Pages are html/template documents; one small embedded script adds what
// needs a browser: an API key kept in sessionStorage and sent as the API
// wants it, live updates and step progress from the run's event stream,
// and the cancel and send-event actions, which call the API's own
// operations.
package ui

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
)

// Prefix is where the dashboard is served.
const Prefix = "/ui/"

//go:embed assets templates
var files embed.FS

// Access is what a request may do, as the API's keys say.
type Access struct {
	// Who is the key's id ("dev" in dev mode), recorded in the audit.
	Who string
	// Execute tells whether the key may cancel runs and send events.
	Execute bool
}

// Config configures the dashboard.
type Config struct {
	// Authorize checks a request's key for the read scope. It returns
	// the access granted, or an HTTP status (401, 403) and a message.
	Authorize func(r *http.Request) (Access, int, string)
	// APIBase is the path prefix of the API's operations (/v1/api).
	APIBase string
}

// Handler serves the dashboard.
type Handler struct {
	e    *engine.Engine
	cfg  Config
	tmpl *template.Template
	mux  *http.ServeMux
}

// New returns the dashboard's handler over e.
func New(e *engine.Engine, cfg Config) *Handler {
	h := &Handler{e: e, cfg: cfg, mux: http.NewServeMux()}
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/*.html"))
	assets, _ := fs.Sub(files, "assets")
	static := http.StripPrefix(Prefix+"assets/", http.FileServerFS(assets))
	h.mux.Handle("GET "+Prefix+"assets/", cacheable(static))
	h.mux.HandleFunc("GET "+Prefix+"{$}", h.page(h.runs))
	h.mux.HandleFunc("GET "+Prefix+"runs/{run}", h.page(h.run))
	h.mux.HandleFunc("GET "+Prefix+"workers", h.page(h.workers))
	h.mux.HandleFunc("GET "+Prefix+"workflows", h.page(h.workflows))
	h.mux.HandleFunc("GET "+Prefix+"workflows/{name}/{version}", h.page(h.definition))
	h.mux.HandleFunc("GET "+Prefix+"schedules", h.page(h.schedules))
	h.mux.HandleFunc("GET "+Prefix+"events", h.page(h.events))
	h.mux.HandleFunc("GET "+Prefix+"batches/{batch}", h.page(h.batch))
	h.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		h.render(w, r, http.StatusNotFound, "message", &view{Title: "Not found", Message: "No page at " + r.URL.Path + "."})
	})
	return h
}

// FaviconPath is where browsers ask for a site's icon unasked.
const FaviconPath = "/favicon.ico"

// Favicon serves the dashboard's icon (an SVG, which browsers take at
// FaviconPath whatever its name says), so no page's request for it is a
// 404.
func Favicon() http.Handler {
	icon, _ := files.ReadFile("assets/favicon.svg")
	return cacheable(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		_, _ = w.Write(icon)
	}))
}

func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// view is what every page template receives.
type view struct {
	Title   string
	Nav     string
	APIBase string
	Auth    bool // the page needs a key the request did not bring
	Message string
	Access  Access
	Banners []string
	Runs    *runsView
	Run     *runView
	Workers []cairn.WorkerInfo
	// Workflows, Definition, Schedules: the workflows, one workflow
	// version's and the schedules' pages.
	Workflows  []cairn.WorkflowSummary
	Definition *definitionView
	Schedules  *cairn.SchedulePage
	Events     *eventsView
	Batch      *cairn.Batch
	Rendered   time.Time
}

// page wraps a page's builder: the key check, the time bound, errors as
// pages with their status.
func (h *Handler) page(build func(ctx context.Context, r *http.Request, v *view) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		acc, status, msg := h.cfg.Authorize(r)
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			}
			h.render(w, r, status, "message", &view{Title: "API key needed", Auth: status == http.StatusUnauthorized, Message: msg})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		v := &view{Access: acc}
		name, err := build(ctx, r, v)
		if err != nil {
			st, m := errorStatus(err)
			h.render(w, r, st, "message", &view{Title: http.StatusText(st), Message: m, Access: acc})
			return
		}
		h.render(w, r, http.StatusOK, name, v)
	}
}

func errorStatus(err error) (int, string) {
	var nf *engine.NotFoundError
	var ve cairn.ValidationError
	var ie *engine.InvalidError
	switch {
	case errors.As(err, &ie):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &nf):
		return http.StatusNotFound, err.Error()
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "the store did not answer in time"
	}
	return http.StatusBadGateway, "the store failed: " + err.Error()
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	v.APIBase = h.cfg.APIBase
	v.Rendered = time.Now().UTC()
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, v); err != nil {
		http.Error(w, "cannot render the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
