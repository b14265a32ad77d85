package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
)

// ---- Progress streams: a step body's progress, a run's event stream ----

// DefaultMaxStreams bounds the run streams one instance serves at once
// (Config.MaxStreams).
const DefaultMaxStreams = 1000

// streamKeepAlive is how often an idle stream sends a comment, so proxies
// keep it open.
var streamKeepAlive = 15 * time.Second

type progressInput struct {
	Lease string `path:"lease" maxLength:"2048" doc:"The lease id from claim."`
	Body  cairn.ProgressRequest
}

type streamInput struct {
	Run         string `path:"run" maxLength:"64" pattern:"^[0-9A-Za-z]+$" doc:"Run id."`
	LastEventID string `header:"Last-Event-ID" maxLength:"64" doc:"The id of the last status or journal event received (rev.seq): the stream resumes after it. Progress is not replayed."`
}

func (a *API) registerStreamOps() {
	op(a, huma.Operation{
		OperationID: "progressStep", Method: http.MethodPost, Path: "/steps/{lease}/progress", Tags: []string{"Workers"},
		Summary:       "Publish a step's progress",
		Description:   "Hands a JSON value (at most 16 KiB) to the watchers of the run's stream, on this instance at once and on the others over the notification bus. Nothing is stored and nothing is written: the lease is proven from this instance's lease cache, or by one read per lease and instance. A lease may send 50 messages a second with a burst of 20; more are refused with 429 and Retry-After (the SDKs wait and resend). A lease that ended is refused as fenced.",
		DefaultStatus: http.StatusNoContent, MaxBodyBytes: 20 << 10,
		Errors: append([]int{http.StatusTooManyRequests}, protocolErrors...),
	}, auth.ScopeWorker, func(ctx context.Context, in *progressInput) (*struct{}, error) {
		err := a.engine.Progress(ctx, in.Lease, in.Body.Value)
		var rate *engine.ProgressRateError
		var nf *engine.NotFoundError
		switch {
		case errors.As(err, &rate):
			p := problem(http.StatusTooManyRequests, rate.Error())
			p.headers = http.Header{"Retry-After": {strconv.Itoa(int(rate.RetryAfter/time.Second) + 1)}, "Retry-After-Ms": {strconv.FormatInt(rate.RetryAfter.Milliseconds()+1, 10)}}
			return nil, p
		case errors.As(err, &nf):
			p := problem(http.StatusNotFound, nf.Error())
			p.Errors = []*huma.ErrorDetail{{Message: "no live lease has this id", Location: "path.lease"}}
			return nil, p
		}
		return nil, err
	})
	o := huma.Operation{
		OperationID: "streamRun", Method: http.MethodGet, Path: "/runs/{run}/stream", Tags: []string{"Runs"},
		Summary:     "Follow a run as Server-Sent Events",
		Description: "Events: status (the run's progress, at each change), journal (each new journal entry), progress (a step body's progress values, live only: missed while disconnected is not replayed; from another instance only over a fan-out notification bus), end (the final status; the stream then closes). Status and journal events carry an id (rev.seq); a client that reconnects with Last-Event-ID gets the status if it changed and the journal entries after seq. A stream lasts at most 4/5 of the server's request limit, then closes: reconnect. Idle streams send a comment every 15 s. Audited once per connection, like the journal.",
		Errors:      []int{http.StatusNotFound},
		Responses:   map[string]*huma.Response{"200": a.eventStreamResponse()},
	}
	op(a, o, auth.ScopeRead, a.streamRun)
}

// eventStreamResponse is the spec of a run stream's answer: a text/event-stream
// whose events are each one of the stream's kinds (the schema is an
// event's: OpenAPI 3.2's itemSchema, which 3.0 and 3.1 tools read from
// schema).
func (a *API) eventStreamResponse() *huma.Response {
	reg := a.huma.OpenAPI().Components.Schemas
	var kinds []*huma.Schema
	for _, k := range []struct {
		name string
		t    reflect.Type
	}{
		{cairn.StreamStatus, reflect.TypeFor[cairn.RunProgress]()},
		{cairn.StreamJournal, reflect.TypeFor[cairn.JournalEvent]()},
		{cairn.StreamProgress, reflect.TypeFor[cairn.ProgressEvent]()},
		{cairn.StreamEnd, reflect.TypeFor[cairn.RunProgress]()},
	} {
		kinds = append(kinds, &huma.Schema{
			Title: "Event " + k.name, Type: huma.TypeObject, Required: []string{"event", "data"},
			Properties: map[string]*huma.Schema{
				"event": {Type: huma.TypeString, Enum: []any{k.name}},
				"id":    {Type: huma.TypeString, Description: "rev.seq, on status, journal and end events."},
				// An event's fields are strings (the HTML spec's model of an
				// event, which OpenAPI and spec-driven testers follow): data
				// is JSON text, its shape given as its content schema.
				"data": {Type: huma.TypeString, Extensions: map[string]any{
					"contentMediaType": "application/json", "contentSchema": reg.Schema(k.t, true, k.name),
				}},
			},
		})
	}
	return &huma.Response{
		Description: "Server-Sent Events, each one of these objects (event, id, data: JSON text).",
		Content:     map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{OneOf: kinds}}},
	}
}

// cursor is what a stream's client has: the run's rev and the number of
// journal entries.
type cursor struct {
	rev int64
	seq int
}

func (c cursor) String() string { return fmt.Sprintf("%d.%d", c.rev, c.seq) }

func parseCursor(s string) (cursor, error) {
	if s == "" {
		return cursor{rev: -1}, nil
	}
	r, q, ok := strings.Cut(s, ".")
	rev, err1 := strconv.ParseInt(r, 10, 64)
	seq, err2 := strconv.Atoi(q)
	// rev -1: no status yet (the journal events before a stream's first
	// status carry it).
	if !ok || err1 != nil || err2 != nil || rev < -1 || seq < 0 {
		p := problem(http.StatusUnprocessableEntity, "Last-Event-ID is not an event id of this stream (rev.seq)")
		p.Errors = []*huma.ErrorDetail{{Message: "want rev.seq", Location: "header.Last-Event-ID", Value: s}}
		return cursor{}, p
	}
	return cursor{rev: rev, seq: seq}, nil
}

// snapshot is a run's status and journal as one read found them.
type snapshot struct {
	status  *cairn.RunProgress
	journal []cairn.JournalEntry
}

func (a *API) streamRun(ctx context.Context, in *streamInput) (*huma.StreamResponse, error) {
	from, err := parseCursor(in.LastEventID)
	if err != nil {
		return nil, err
	}
	if !a.streams.acquire() {
		p := problem(http.StatusServiceUnavailable, "this instance serves as many run streams as it may; retry shortly")
		p.headers = http.Header{"Retry-After": {"1"}}
		return nil, p
	}
	// Subscribed before the first read: progress sent after the read is
	// not lost.
	sub, stop := a.engine.WatchProgress(in.Run)
	first, journal, err := a.engine.RunStream(ctx, in.Run, 0, 0)
	if err == nil {
		err = a.engine.Audit(ctx, who(ctx), "streamRun", in.Run)
	}
	if err != nil {
		stop()
		a.streams.release()
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		defer a.streams.release()
		defer stop()
		s := &stream{w: hc.BodyWriter(), at: from}
		hc.SetHeader("Content-Type", "text/event-stream")
		hc.SetHeader("Cache-Control", "no-store")
		hc.SetHeader("X-Accel-Buffering", "no")
		if s.open() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(hc.Context(), a.engine.MaxClaimHold())
		defer cancel()
		statuses := make(chan snapshot, 1)
		statuses <- snapshot{first, journal}
		go a.followStatus(ctx, in.Run, first.Rev, statuses)
		s.pump(ctx, statuses, sub)
	}}, nil
}

// followStatus sends run's status and journal at each change after rev,
// until the run ends or ctx does; it closes out when it stops.
func (a *API) followStatus(ctx context.Context, run string, rev int64, out chan<- snapshot) {
	defer close(out)
	for ctx.Err() == nil {
		st, j, err := a.engine.RunStream(ctx, run, rev, a.engine.MaxClaimHold())
		if err != nil {
			if ctx.Err() == nil {
				a.log.WarnContext(ctx, "run stream: reading the run failed; closing the stream", "run", run, "err", err)
			}
			return
		}
		if st.Rev > rev {
			select {
			case out <- snapshot{st, j}:
			case <-ctx.Done():
				return
			}
		}
		rev = st.Rev
		if st.Status.Terminal() {
			return
		}
	}
}

// streamLimit bounds the streams an instance serves at once.
type streamLimit chan struct{}

func (l streamLimit) acquire() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l streamLimit) release() { <-l }
