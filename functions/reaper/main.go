// Command reaper is cairn's scheduled function: each invocation runs one
// reaper pass (engine.Reap) over the bucket named by CAIRN_BLOB — expire
// lost leases, fire sleeps, wait timeouts and deadlines, re-announce
// unclaimed work. Passes are idempotent and safe to run concurrently.
//
// Three modes:
//
//   - AWS Lambda (AWS_LAMBDA_RUNTIME_API is set): a handler for EventBridge
//     Scheduler (rate(1 minute)); the event's content is ignored. IAM
//     decides who may invoke it: no key is needed.
//   - HTTP (Cloud Run, called by Cloud Scheduler): POST /reap (or
//     POST /v1/api/reaper/run, the API's path) runs one pass and answers
//     its statistics. The caller must present, as "Authorization: Bearer",
//     either an OIDC ID token (Cloud Scheduler's oidcToken: signature by
//     the issuer's keys, audience CAIRN_OIDC_AUDIENCE, a verified email in
//     CAIRN_OIDC_EMAILS) or an API key with the admin scope (checked by
//     package api, exactly as on the API's own reaper endpoint). Deploy the
//     Cloud Run service private as well (roles/run.invoker for the
//     scheduler's service account only): the check here is the second
//     lock, not the only one.
//   - A loop (-every 1s): for laptops and the local multi-process setup;
//     no HTTP, no authentication.
//
// Configuration is environment variables only: see internal/config.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	fs := flag.NewFlagSet("reaper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	every := fs.Duration("every", 0, "run a pass this often, in this process, until SIGTERM (no HTTP server); for local use")
	once := fs.Bool("once", false, "run one pass, print its statistics and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	role := config.ReaperHTTP
	if _, onLambda := os.LookupEnv(config.EnvLambdaRuntimeAPI); onLambda || *every > 0 || *once {
		role = config.Reaper
	}
	cfg, log, rt, code := config.Start(ctx, role, stderr)
	if code != 0 {
		return code
	}
	defer rt.Close()
	switch {
	case cfg.OnLambda:
		stopSignals()
		lambda.Start(lambdaHandler(rt.Engine, log))
		return 0 // not reached
	case *once:
		st, err := reapOnce(ctx, rt.Engine, log)
		if err != nil {
			return 1
		}
		json.NewEncoder(os.Stdout).Encode(st)
		return 0
	case *every > 0:
		loop(ctx, rt.Engine, *every, log)
		return 0
	}
	h, err := newHTTPHandler(cfg, rt.Engine, log)
	if err != nil {
		log.Error("cairn reaper: cannot start", "err", err)
		return 1
	}
	if err := serve(ctx, cfg.Addr(), h, log, nil); err != nil {
		log.Error("cairn reaper: server failed", "err", err)
		return 1
	}
	return 0
}

// result is what a pass answers: the API's reaper answer, the same shape.
type result struct {
	engine.ReapStats
	DurationMs int64 `json:"duration_ms"`
}

func reapOnce(ctx context.Context, e *engine.Engine, log *slog.Logger) (result, error) {
	start := time.Now()
	st, err := e.Reap(ctx)
	r := result{ReapStats: st, DurationMs: time.Since(start).Milliseconds()}
	switch {
	case err != nil:
		log.Error("reaper pass failed", "err", err, "took_ms", r.DurationMs)
	case st.Errors > 0:
		log.Warn("reaper pass done with errors", "stats", st, "took_ms", r.DurationMs)
	case st.RunsVisited > 0:
		log.Info("reaper pass", "stats", st, "took_ms", r.DurationMs)
	default:
		log.Debug("reaper pass: nothing due", "took_ms", r.DurationMs)
	}
	return r, err
}

// lambdaHandler runs one pass per invocation, whatever the event (an
// EventBridge Scheduler payload, a test invoke).
func lambdaHandler(e *engine.Engine, log *slog.Logger) func(context.Context, json.RawMessage) (result, error) {
	return func(ctx context.Context, _ json.RawMessage) (result, error) {
		return reapOnce(ctx, e, log)
	}
}

// loop runs a pass every period until ctx ends (SIGTERM or SIGINT).
func loop(ctx context.Context, e *engine.Engine, every time.Duration, log *slog.Logger) {
	log.Info("cairn reaper: running a pass every " + every.String())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		reapOnce(ctx, e, log)
		select {
		case <-ctx.Done():
			log.Info("cairn reaper: stopped")
			return
		case <-t.C:
		}
	}
}

// reapPaths are the paths a pass is run at over HTTP.
var reapPaths = []string{"/reap", api.BasePath + "/reaper/run"}

// newHTTPHandler serves the reaper endpoint: OIDC tokens are checked here,
// API keys by package api.
func newHTTPHandler(cfg *config.Config, e *engine.Engine, log *slog.Logger) (http.Handler, error) {
	var v *Verifier
	if cfg.OIDC.Enabled() {
		v = &Verifier{
			Issuer: cfg.OIDC.Issuer, Audience: cfg.OIDC.Audience, Emails: cfg.OIDC.Emails,
			Keys: &RemoteKeys{URL: cfg.OIDC.JWKSURL},
		}
	}
	return newHandler(e, api.New(e, cfg.APIConfig(log)).Handler(), v, cfg.Dev, log), nil
}

// newHandler is the reaper's HTTP handler. apiHandler authenticates API
// keys (and runs the pass) for requests that carry no OIDC token; v, if
// set, verifies those that do.
func newHandler(e *engine.Engine, apiHandler http.Handler, v *Verifier, dev bool, log *slog.Logger) http.Handler {
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
		st, err := reapOnce(r.Context(), e, log)
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

// serve runs the HTTP server until ctx ends (SIGTERM or SIGINT). A pass in flight
// finishes (within 8 s; an interrupted pass is harmless: the next one
// redoes what is left).
func serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("cairn reaper: serving", "addr", "http://"+ln.Addr().String()+reapPaths[0])
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func decodeJSON(r io.Reader, limit int64, v any) error {
	return json.NewDecoder(io.LimitReader(r, limit)).Decode(v)
}
