package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
	"github.com/cairn-dev/cairn/sdk/codec"
)

// DefaultServer is the API a client talks to when neither an address nor
// CAIRN_SERVER is given: what `make run` (cairn dev) listens on.
const DefaultServer = "http://127.0.0.1:8080"

// Client talks to the cairn API: it starts, watches, signals and cancels
// runs, and lists workflows and workers. A Worker uses one for the worker
// protocol. It is safe for concurrent use.
//
// Every call goes through the client generated from the committed OpenAPI
// document (package openapi/client); answers about runs, workflows and
// workers are decoded into the root package's views. API returns the
// generated client for calls the SDK does not wrap.
type Client struct {
	server string
	key    string
	http   *http.Client
	api    *client.ClientWithResponses
	// codec encrypts what the client sends and decodes what it reads
	// (codec.go); clear caches encrypted workflows' clear keys.
	codec *codec.Keyring
	clear clearCache
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithAPIKey authenticates every request with Authorization: Bearer key.
// Workers need a key with the worker scope; starting, cancelling and
// signalling runs needs execute; reading runs needs read.
func WithAPIKey(key string) ClientOption { return func(c *Client) { c.key = key } }

// WithHTTPClient sets the HTTP client [a client whose transport keeps up
// to 64 idle connections to the server, enough for a busy worker].
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.http = hc } }

// NewClient returns a client of the API at server (for example
// "http://127.0.0.1:8080"; the /v1/api base path is added). It performs
// no I/O.
func NewClient(server string, opts ...ClientOption) (*Client, error) {
	if server == "" {
		server = DefaultServer
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cairn: server %q is not an http(s) URL such as %s", server, DefaultServer)
	}
	c := &Client{server: strings.TrimRight(server, "/")}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 128
		t.MaxIdleConnsPerHost = 64
		c.http = &http.Client{Transport: t}
	}
	c.api, err = client.NewClientWithResponses(c.server,
		// Answers that say nothing was applied (503, a refused
		// connection) are sent again, honouring Retry-After.
		client.WithHTTPClient(&retryDoer{next: c.http}),
		client.WithRequestEditorFn(func(ctx context.Context, req *http.Request) error {
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			req.Header.Set("User-Agent", "cairn-go-sdk")
			// The caller's span, if any, continues on the server: a run
			// started under a span belongs to the caller's trace.
			propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ClientFromEnv returns a client of $CAIRN_SERVER [DefaultServer] with the
// key in $CAIRN_KEY, if any. Options given override both.
func ClientFromEnv(opts ...ClientOption) (*Client, error) {
	if k := os.Getenv("CAIRN_KEY"); k != "" {
		opts = append([]ClientOption{WithAPIKey(k)}, opts...)
	}
	return NewClient(os.Getenv("CAIRN_SERVER"), opts...)
}

// CloseIdleConnections closes the client's idle connections to the
// server (the client stays usable). Call it when done with a client whose
// server is about to stop: an HTTP server waits for connections it has
// not seen a request on.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Server returns the API's address.
func (c *Client) Server() string { return c.server }

// API returns the generated client the SDK is built on, for calls the SDK
// does not wrap (and for hand-written workers).
func (c *Client) API() *client.ClientWithResponses { return c.api }

// check turns a generated call's outcome into an error: a transport error
// when no answer came, an *APIError when the answer was not a success (or
// a success whose body did not decode). resp is a generated *XResponse.
func (c *Client) check(err error, resp any) error {
	if err != nil {
		return c.transport(err)
	}
	v := reflect.ValueOf(resp).Elem()
	hr, _ := v.FieldByName("HTTPResponse").Interface().(*http.Response)
	b := v.FieldByName("Body").Bytes()
	if hr == nil {
		return &transportError{server: c.server, err: errors.New("no response")}
	}
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		return problemOf(hr.StatusCode, b)
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if strings.HasPrefix(f.Name, "JSON2") && v.Field(i).IsNil() {
			return unexpected(hr.StatusCode, fmt.Sprintf("the %s answer is not the JSON this client expects (Content-Type %q)", hr.Status, hr.Header.Get("Content-Type")))
		}
	}
	return nil
}

// decodeView returns a function that turns a generated call's raw answer
// into T, decoded from the API's JSON (T is one of the root package's
// view types, or a body holding them): the generated client builds the
// request, the SDK reads the answer into the types the engine encoded it
// from, so no field is lost on the way. Errors are as check's.
//
//	r, err := decodeView[cairn.Run](c)(c.api.GetRun(ctx, id))
func decodeView[T any](c *Client) func(*http.Response, error) (*T, error) {
	return func(resp *http.Response, err error) (*T, error) {
		if err != nil {
			return nil, c.transport(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, c.transport(err)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, problemOf(resp.StatusCode, b)
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
			return nil, unexpected(resp.StatusCode, fmt.Sprintf("the %s answer is not the JSON this client expects (Content-Type %q)", resp.Status, resp.Header.Get("Content-Type")))
		}
		v := new(T)
		if err := json.Unmarshal(b, v); err != nil {
			return nil, unexpected(resp.StatusCode, fmt.Sprintf("the %s answer does not decode: %v", resp.Status, err))
		}
		return v, nil
	}
}

// transport is the error of a call that got no answer.
func (c *Client) transport(err error) error {
	if ctxErr := contextError(err); ctxErr != nil {
		return ctxErr
	}
	return &transportError{server: c.server, err: err}
}

func unexpected(status int, detail string) *APIError {
	return &APIError{Status: status, Title: "Unexpected response", Detail: detail}
}

// contextError returns the context error behind err, if that is what it is.
func contextError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// problemOf decodes an RFC 9457 problem body; bodies that are not one
// still give a usable error.
func problemOf(status int, body []byte) *APIError {
	e := &APIError{Status: status, Title: http.StatusText(status)}
	var p client.Problem
	if json.Unmarshal(body, &p) == nil {
		if p.Title != "" { // a proxy's problem may lack one
			e.Title = p.Title
		}
		if p.Detail != nil {
			e.Detail = *p.Detail
		}
		if p.Reason != nil {
			e.Reason = Reason(*p.Reason)
		}
		if p.Errors != nil {
			for _, d := range *p.Errors {
				e.Errors = append(e.Errors, FieldProblem{Location: deref(d.Location), Message: deref(d.Message)})
			}
		}
		return e
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		e.Detail = s
	}
	return e
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

func ptr[T comparable](v T) *T {
	var z T
	if v == z {
		return nil
	}
	return &v
}

// ---- Runs ----

// StartOptions are a run's optional settings.
type StartOptions struct {
	// Version of the workflow to run [the newest registered].
	Version string
	// Input is the run's input: any value that encodes to JSON, or a
	// json.RawMessage.
	Input any
	// Correlation is a free id, visible to templates as run.correlation.
	Correlation string
	// IdempotencyKey: starting again with the same key (per workflow)
	// returns the first run, with Existed set.
	IdempotencyKey string
	// Deadline: the run times out then [the workflow's deadline, if any].
	Deadline time.Time
	// Timeout sets Deadline to now + Timeout when Deadline is zero.
	Timeout time.Duration
	// State is the run's initial state (top-level keys).
	State map[string]any
	// Priority of the run's steps, in [-100, 100] [0]: of the steps ready
	// at once, higher priorities are offered first (sdk/flow.go).
	Priority int
	// Budget replaces the workflow's budget for this run (nil: the
	// workflow's, if any).
	Budget *Budget
	// Attributes are the run's search attributes: name to a string,
	// number, bool or time.Time (at most 16). List filters on them
	// (ListOptions.Attrs); a step sets them with SetAttributes.
	Attributes map[string]any
}

// Start starts a run of workflow.
func (c *Client) Start(ctx context.Context, workflow string, o StartOptions) (*Run, error) {
	req := client.StartRequest{
		Workflow:       workflow,
		Version:        ptr(o.Version),
		Correlation:    ptr(o.Correlation),
		IdempotencyKey: ptr(o.IdempotencyKey),
	}
	if o.Priority != 0 {
		p := int64(o.Priority)
		req.Priority = &p
	}
	if b := o.Budget; b != nil {
		req.Budget = &client.Budget{CostUsd: ptr(b.CostUSD), Tokens: ptr(b.Tokens)}
		if len(b.Counters) > 0 {
			req.Budget.Counters = &b.Counters
		}
	}
	var err error
	if req.Input, err = optionalJSON(o.Input, "run input"); err != nil {
		return nil, err
	}
	if !o.Deadline.IsZero() {
		d := o.Deadline.UTC()
		req.Deadline = &d
	} else if o.Timeout > 0 {
		d := time.Now().Add(o.Timeout).UTC()
		req.Deadline = &d
	}
	if len(o.State) > 0 {
		st, err := toJSONMap(o.State)
		if err != nil {
			return nil, fmt.Errorf("cairn: run state: %w", err)
		}
		req.State = &st
	}
	if len(o.Attributes) > 0 {
		a, err := toJSONMap(o.Attributes)
		if err != nil {
			return nil, fmt.Errorf("cairn: run attributes: %w", err)
		}
		req.Attributes = &a
	}
	if err := c.sealStart(ctx, workflow, o.Version, &req); err != nil {
		return nil, err
	}
	return c.started(ctx)(decodeView[cairn.StartResult](c)(c.api.StartRun(ctx, req)))
}

// started turns the answer of a call that starts a run into the run, its
// references resolved.
func (c *Client) started(ctx context.Context) func(*cairn.StartResult, error) (*Run, error) {
	return func(res *cairn.StartResult, err error) (*Run, error) {
		if err != nil {
			return nil, err
		}
		if res.Run == nil {
			return nil, unexpected(http.StatusCreated, "the answer holds no run")
		}
		if err := c.resolveRun(ctx, res.Run); err != nil {
			return nil, err
		}
		if err := c.openRun(res.Run); err != nil {
			return nil, err
		}
		return &Run{Run: *res.Run, Existed: res.Existed, Skipped: res.Skipped}, nil
	}
}

// viewed turns the answer of a call that returns a run view into the run,
// its references resolved.
func (c *Client) viewed(ctx context.Context) func(*cairn.Run, error) (*Run, error) {
	return func(r *cairn.Run, err error) (*Run, error) {
		if err != nil {
			return nil, err
		}
		if err := c.resolveRun(ctx, r); err != nil {
			return nil, err
		}
		if err := c.openRun(r); err != nil {
			return nil, err
		}
		return &Run{Run: *r}, nil
	}
}

// Get returns a run. The read is audited with the client's key.
func (c *Client) Get(ctx context.Context, run string) (*Run, error) {
	return c.viewed(ctx)(decodeView[cairn.Run](c)(c.api.GetRun(ctx, run, nil)))
}

// Cancel cancels a running run. Workers holding its steps learn it on
// their next heartbeat and cancel the bodies. Cancelling an ended run is a
// 409.
func (c *Client) Cancel(ctx context.Context, run, reason string) (*Run, error) {
	return c.viewed(ctx)(decodeView[cairn.Run](c)(c.api.CancelRun(ctx, run, client.CancelRequest{Reason: ptr(reason)})))
}

// Pause pauses a running run: none of its steps is offered to a worker,
// and its sleeps, backoffs, wait timeouts and deadline act only at its
// resume; attempts held go on and are recorded. Pausing a paused run
// changes nothing; pausing an ended run is a 409.
func (c *Client) Pause(ctx context.Context, run string) (*Run, error) {
	return c.viewed(ctx)(decodeView[cairn.Run](c)(c.api.PauseRun(ctx, run)))
}

// Resume resumes a paused run: its ready steps are offered again and what
// came due meanwhile acts now. Resuming a running run changes nothing;
// resuming an ended run is a 409.
func (c *Client) Resume(ctx context.Context, run string) (*Run, error) {
	return c.viewed(ctx)(decodeView[cairn.Run](c)(c.api.ResumeRun(ctx, run)))
}

// RerunOptions choose what a rerun runs again.
type RerunOptions struct {
	// FromStep runs this step and every step after it again; every other
	// step that completed in the old run keeps its output. Empty: every
	// completed step is reused and the rest run (a retry of what failed).
	FromStep string
	// IdempotencyKey: rerunning again with the same key (per workflow)
	// returns the first rerun, with Existed set.
	IdempotencyKey string
}

// Rerun starts a new run from an ended one: the same workflow version,
// input, correlation and final state, with the old run's completed steps
// reused as chosen by o. The new run's RerunOf names the old run.
// Rerunning a running run is a 409 (an *APIError).
func (c *Client) Rerun(ctx context.Context, run string, o RerunOptions) (*Run, error) {
	return c.started(ctx)(decodeView[cairn.StartResult](c)(c.api.RerunRun(ctx, run, client.RerunRequest{FromStep: ptr(o.FromStep), IdempotencyKey: ptr(o.IdempotencyKey)})))
}

// Event is an event sent to a run.
type Event struct {
	// Name resumes the wait steps waiting for it.
	Name string
	// Payload becomes the output of the wait step it resumes: any value
	// that encodes to JSON, or a json.RawMessage.
	Payload any
	// ID, when set, makes sending safe to retry: an event whose id the run
	// has seen is ignored.
	ID string
}

// SendEvent sends an event to a run.
func (c *Client) SendEvent(ctx context.Context, run string, ev Event) (*EventResult, error) {
	req := client.EventRequest{Name: ev.Name, Id: ptr(ev.ID)}
	var err error
	if req.Payload, err = optionalJSON(ev.Payload, "event payload"); err != nil {
		return nil, err
	}
	if req.Payload, err = sealValue(c.codec, req.Payload); err != nil {
		return nil, fmt.Errorf("cairn: encrypting the event payload: %w", err)
	}
	return decodeView[EventResult](c)(c.api.SendEvent(ctx, run, req))
}

// Journal returns what happened to a run, oldest first. The read is
// audited.
func (c *Client) Journal(ctx context.Context, run string) ([]JournalEntry, error) {
	j, err := decodeView[struct {
		Entries []JournalEntry `json:"entries"`
	}](c)(c.api.GetRunJournal(ctx, run))
	if err != nil {
		return nil, err
	}
	for i := range j.Entries {
		if err := openValue(c.codec, &j.Entries[i].Data); err != nil {
			return nil, codecError("a journal entry", err)
		}
	}
	return j.Entries, nil
}

// ListOptions filter and page a run listing.
type ListOptions struct {
	Workflow string
	Status   cairn.RunStatus
	// Correlation keeps only the runs started with it.
	Correlation string
	// IDPrefix keeps only the runs whose id starts with it.
	IDPrefix string
	// StartedAfter and StartedBefore keep only the runs started at or
	// after, and before, these times (zero: no bound).
	StartedAfter, StartedBefore time.Time
	// Attrs keep only the runs whose search attributes satisfy each
	// condition: "name:value" (equal), "name>value", "name>=value",
	// "name<value", "name<=value". Runs then come in the first
	// condition's order: by value, newest first within one.
	Attrs []string
	// Limit is the runs read per page [50].
	Limit int
	// Cursor is the NextCursor of the previous page.
	Cursor string
}

// StepInput returns the input attempt of step got from its lease, when
// it was small enough to keep (InputView.Kept). Audited like Get.
func (c *Client) StepInput(ctx context.Context, run, step string, attempt int) (*InputView, error) {
	v, err := decodeView[InputView](c)(c.api.GetStepInput(ctx, run, step, int64(attempt)))
	if err == nil {
		if err = openValue(c.codec, &v.Input); err != nil {
			return nil, codecError("the step's input", err)
		}
	}
	return v, err
}

// StopWorker says that worker id stopped (its drain ended): the server
// lists it as gone at once. Worker.Serve sends it when it returns.
func (c *Client) StopWorker(ctx context.Context, id string) error {
	resp, err := c.api.StopWorkerWithResponse(ctx, id)
	return c.check(err, resp)
}

// List returns one page of runs, newest first.
func (c *Client) List(ctx context.Context, o ListOptions) (*RunPage, error) {
	p := &client.ListRunsParams{Workflow: ptr(o.Workflow), Cursor: ptr(o.Cursor), Correlation: ptr(o.Correlation), IdPrefix: ptr(o.IDPrefix)}
	if !o.StartedAfter.IsZero() {
		p.StartedAfter = &o.StartedAfter
	}
	if !o.StartedBefore.IsZero() {
		p.StartedBefore = &o.StartedBefore
	}
	if o.Status != "" {
		s := client.ListRunsParamsStatus(o.Status)
		p.Status = &s
	}
	if o.Limit > 0 {
		l := int64(o.Limit)
		p.Limit = &l
	}
	if len(o.Attrs) > 0 {
		p.Attr = &o.Attrs
	}
	return decodeView[RunPage](c)(c.api.ListRuns(ctx, p))
}

// Runs iterates over every run matching o, newest first, fetching pages
// as it goes. It stops at the first error, which it yields.
func (c *Client) Runs(ctx context.Context, o ListOptions) iter.Seq2[RunSummary, error] {
	return paged(o.Cursor, func(cursor string) ([]RunSummary, string, error) {
		o.Cursor = cursor
		p, err := c.List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return p.Runs, p.NextCursor, nil
	})
}

// paged iterates over the items of a cursor-paginated listing from the
// page at cursor first: page reads the page at a cursor, and returns its
// items and the next page's cursor ("" after the last page). It stops at
// the first error, which it yields.
func paged[T any](first string, page func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for cursor := first; ; {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// Wait waits until a run ends or ctx is done, and returns it. A run that
// ended in failure is returned with a nil error: look at its Status and
// Error, or call Run.Err. A function's run that continued as new is
// followed to the last run of the chain (its ContinuedFrom names the one
// before; Get reads one run as it is).
//
// It holds one request (GET /runs/{run} with wait_ms, audited once when
// it answers) that the server answers when the run ends, however often
// the run changes meanwhile; a run still running when the hold ends is
// waited on again. A server that answers at once without holding (one
// that predates wait_ms) is followed as Watch does. Transient errors are
// retried with backoff.
func (c *Client) Wait(ctx context.Context, run string) (*Run, error) {
	for {
		r, err := c.waitOne(ctx, run)
		if err != nil || r.ContinuedAs == "" {
			return r, err
		}
		run = r.ContinuedAs
	}
}

func (c *Client) waitOne(ctx context.Context, run string) (*Run, error) {
	const hold = 20 * time.Second
	return follow(ctx, func() (*Run, bool, error) {
		sent := time.Now()
		r, err := decodeView[cairn.Run](c)(c.api.GetRun(ctx, run, &client.GetRunParams{WaitMs: ptr(hold.Milliseconds())}))
		switch {
		case err != nil:
			return nil, false, err
		case r.Status.Terminal():
			rr, err := c.viewed(ctx)(r, nil)
			return rr, true, err
		case time.Since(sent) < time.Second:
			rr, err := c.Watch(ctx, run, nil) // not held: the server predates wait_ms
			return rr, true, err
		}
		return nil, false, nil
	})
}

// Watch follows a run until it ends or ctx is done, calling fn (when not
// nil) each time the run changed, the first read included. While the run
// runs it long-polls the run's progress (GET /runs/{run}/status, held by
// the server until the next change; not audited, and without outputs:
// fn's Run has status and per-step progress only). When the run ends it
// reads the whole run once (audited) and calls fn with it. Transient
// errors (the server unreachable or busy) are retried with backoff.
func (c *Client) Watch(ctx context.Context, run string, fn func(*Run)) (*Run, error) {
	const hold = 20 * time.Second
	after := int64(-1)
	return follow(ctx, func() (*Run, bool, error) {
		params := &client.GetRunStatusParams{}
		if after >= 0 {
			params.After, params.WaitMs = ptr(after), ptr(hold.Milliseconds())
		}
		p, err := decodeView[cairn.RunProgress](c)(c.api.GetRunStatus(ctx, run, params))
		if err != nil {
			return nil, false, err
		}
		if p.Status.Terminal() {
			r, err := c.Get(ctx, run)
			if err != nil {
				return nil, true, err
			}
			if fn != nil {
				fn(r)
			}
			return r, true, nil
		}
		if p.Rev != after {
			after = p.Rev
			if fn != nil {
				fn(progressRun(p))
			}
		}
		return nil, false, nil
	})
}

// follow calls read until it says the run is done, and returns what that
// read returned. A read that fails with a transient error (the server
// unreachable or busy) is retried with backoff until ctx is done; any
// other error is returned.
func follow(ctx context.Context, read func() (r *Run, done bool, err error)) (*Run, error) {
	b := backoff{min: 100 * time.Millisecond, max: 2 * time.Second} // between transient errors
	var lastErr error
	for {
		r, done, err := read()
		switch {
		case done:
			return r, err
		case err == nil:
			lastErr = nil
			b.reset()
			continue
		case temporary(err) && ctx.Err() == nil:
			lastErr = err
		default:
			return nil, err
		}
		if !b.sleep(ctx) {
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
		}
	}
}

// progressRun is the part of a Run that a progress read carries.
func progressRun(p *cairn.RunProgress) *Run {
	r := &Run{Run: cairn.Run{
		ID: p.ID, Workflow: p.Workflow, Version: p.Version, Status: p.Status,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, EndedAt: p.EndedAt, Error: p.Error,
		StepsDone: p.StepsDone, StepsTotal: p.StepsTotal,
	}}
	for _, s := range p.Steps {
		r.Steps = append(r.Steps, StepView{ID: s.ID, Status: s.Status, Attempt: s.Attempt, Failures: s.Failures,
			Kind: s.Kind, Event: s.Event, ReadyAt: s.ReadyAt, WakeAt: s.WakeAt, Error: s.Error, Holder: s.Holder})
	}
	r.NoLiveWorker = p.NoLiveWorker
	return r
}

// Result waits for a run to end and decodes its output into Out. A run
// that did not complete is a *RunError.
func Result[Out any](ctx context.Context, c *Client, run string) (Out, error) {
	var out Out
	r, err := c.Wait(ctx, run)
	if err != nil {
		return out, err
	}
	if err := r.Err(); err != nil {
		return out, err
	}
	err = r.Decode(&out)
	return out, err
}

// ---- Workflows and workers ----

// Workflows lists registered workflows.
func (c *Client) Workflows(ctx context.Context) ([]WorkflowSummary, error) {
	l, err := decodeView[struct {
		Workflows []WorkflowSummary `json:"workflows"`
	}](c)(c.api.ListWorkflows(ctx))
	if err != nil {
		return nil, err
	}
	return l.Workflows, nil
}

// Workflow returns a registered definition (version "" is the latest).
func (c *Client) Workflow(ctx context.Context, name, version string) (*cairn.Workflow, error) {
	if version == "" {
		ws, err := c.Workflows(ctx)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if w.Name == name {
				version = w.Latest
			}
		}
		if version == "" {
			return nil, &APIError{Status: 404, Title: "Not Found", Detail: fmt.Sprintf("workflow %q not found", name)}
		}
	}
	return decodeView[cairn.Workflow](c)(c.api.GetWorkflow(ctx, name, version))
}

// Workers lists registered workers.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	l, err := decodeView[struct {
		Workers []WorkerInfo `json:"workers"`
	}](c)(c.api.ListWorkers(ctx))
	if err != nil {
		return nil, err
	}
	return l.Workers, nil
}

// ---- helpers ----

// toJSON encodes v, keeping a json.RawMessage or []byte of JSON as is.
func toJSON(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, errors.New("not valid JSON")
		}
		return x, nil
	case []byte:
		if !json.Valid(x) {
			return nil, errors.New("not valid JSON")
		}
		return json.RawMessage(x), nil
	}
	return json.Marshal(v)
}

// optionalJSON encodes v (toJSON) for an optional field: nil stays
// absent. what names the field in an error.
func optionalJSON(v any, what string) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := toJSON(v)
	if err != nil {
		return nil, fmt.Errorf("cairn: %s: %w", what, err)
	}
	return b, nil
}

func toJSONMap(m map[string]any) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		b, err := toJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = b
	}
	return out, nil
}
