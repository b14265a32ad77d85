package engine

import (
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// spyDriver counts the calls that reach the store, and can refuse
// listings.
type spyDriver struct {
	blob.Driver
	calls   atomic.Int64
	listErr func(blob.ListOptions) error
}

func (d *spyDriver) Get(ctx context.Context, key string) (*blob.Object, error) {
	d.calls.Add(1)
	return d.Driver.Get(ctx, key)
}

func (d *spyDriver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	d.calls.Add(1)
	return d.Driver.Stat(ctx, key)
}

func (d *spyDriver) Put(ctx context.Context, key string, data []byte, o blob.WriteOptions) (blob.Version, error) {
	d.calls.Add(1)
	return d.Driver.Put(ctx, key, data, o)
}

func (d *spyDriver) Delete(ctx context.Context, key string) error {
	d.calls.Add(1)
	return d.Driver.Delete(ctx, key)
}

func (d *spyDriver) List(ctx context.Context, o blob.ListOptions) (blob.ListPage, error) {
	d.calls.Add(1)
	if d.listErr != nil {
		if err := d.listErr(o); err != nil {
			return blob.ListPage{}, err
		}
	}
	return d.Driver.List(ctx, o)
}

// nastyIDs cannot be run ids, worker ids, workflow names or versions:
// dot segments, slashes, empty segments, control characters, invalid
// UTF-8, spaces, and too many bytes.
var nastyIDs = []string{
	".", "..", "a/b", "a//b", "/a", "a/", "../runs/x", "a/../b", "./a",
	"a\x00b", "\x00", "a\r\nb", "a\nb", "a\tb", "\x7f", "a\x1bb",
	"\xff", "a\xc3", "\xed\xa0\x80", "a b", " a",
	strings.Repeat("A", 1025), strings.Repeat("é", 129),
}

// wantFieldError fails unless err is a validation error naming field.
func wantFieldError(t *testing.T, what string, err error, field string) {
	t.Helper()
	var v cairn.ValidationError
	if !errors.As(err, &v) || len(v) == 0 || v[0].Field != field {
		t.Fatalf("%s: got %v (%T), want a validation error naming %q", what, err, err, field)
	}
}

// Ids are checked at the engine's entry points: a bad one is a
// validation error naming its field, and never reaches the store (where
// it was an invalid-key error the API answered 502).
func TestInvalidIDsNeverReachTheStore(t *testing.T) {
	ctx := context.Background()
	spy := &spyDriver{Driver: mem.New().Driver()}
	e := newTestEngine(t, blob.NewBucket(spy), Config{})
	register(t, e, "w1", linear("lin", "1", 1))
	for _, id := range nastyIDs {
		calls := spy.calls.Load()
		_, err := e.GetRun(ctx, id)
		wantFieldError(t, "GetRun", err, "run")
		_, err = e.Journal(ctx, id)
		wantFieldError(t, "Journal", err, "run")
		_, err = e.GetRunStatus(ctx, id, 0, 0)
		wantFieldError(t, "GetRunStatus", err, "run")
		_, err = e.CancelRun(ctx, id, "")
		wantFieldError(t, "CancelRun", err, "run")
		_, err = e.SendEvent(ctx, id, cairn.EventRequest{Name: "go"})
		wantFieldError(t, "SendEvent", err, "run")
		_, err = e.StartRun(ctx, cairn.StartRequest{Workflow: id})
		wantFieldError(t, "StartRun", err, "workflow")
		_, err = e.StartRun(ctx, cairn.StartRequest{Workflow: "lin", Version: id})
		wantFieldError(t, "StartRun", err, "version")
		_, err = e.GetWorkflow(ctx, id, "1")
		wantFieldError(t, "GetWorkflow", err, "name")
		_, err = e.GetWorkflow(ctx, "lin", id)
		wantFieldError(t, "GetWorkflow", err, "version")
		_, err = e.Register(ctx, cairn.RegisterRequest{WorkerID: id})
		wantFieldError(t, "Register", err, "worker_id")
		_, err = e.Claim(ctx, cairn.ClaimRequest{WorkerID: id})
		wantFieldError(t, "Claim", err, "worker_id")
		_, err = e.ListRuns(ctx, ListRequest{Workflow: id})
		wantFieldError(t, "ListRuns", err, "workflow")
		_, err = e.ListRuns(ctx, ListRequest{Cursor: id})
		wantFieldError(t, "ListRuns cursor "+id, err, "cursor")
		if n := spy.calls.Load() - calls; n != 0 {
			t.Fatalf("id %q: %d store calls, want none", id, n)
		}
	}
	// Event names and ids are text, never keys: only control characters,
	// invalid UTF-8 and length are refused.
	res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a\x00b", "a\nb", "\x7f", "\xff", strings.Repeat("e", 129)} {
		_, err := e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: name})
		wantFieldError(t, "SendEvent name", err, "name")
		_, err = e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: "go", ID: name})
		wantFieldError(t, "SendEvent id", err, "id")
	}
	for _, name := range []string{".", "..", "a/b", "order approved", strings.Repeat("日", 128)} {
		if _, err := e.SendEvent(ctx, res.Run.ID, cairn.EventRequest{Name: name}); err != nil {
			t.Fatalf("event %q: %v", name, err)
		}
	}
	// A cursor is base64url of a store token: one decoding to control
	// characters is refused too.
	for _, c := range []string{"AAAA", base64.RawURLEncoding.EncodeToString([]byte("runs/\n")), "YQ=", "!!"} {
		_, err := e.ListRuns(ctx, ListRequest{Cursor: c})
		wantFieldError(t, "ListRuns cursor "+c, err, "cursor")
	}
}

// A worker that registers without an id gets one, unique and usable.
func TestRegisterGeneratesWorkerID(t *testing.T) {
	h := newHarness(t, wallClock())
	ctx, e := h.ctx, h.e
	a, err := e.Register(ctx, cairn.RegisterRequest{Workflows: []cairn.Workflow{linear("lin", "1", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Register(ctx, cairn.RegisterRequest{Workflows: []cairn.Workflow{linear("lin", "1", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if !keys.WorkerID.Valid(a.WorkerID) || a.WorkerID == b.WorkerID {
		t.Fatalf("generated worker ids %q and %q: want two distinct valid ids", a.WorkerID, b.WorkerID)
	}
	if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lin"}); err != nil {
		t.Fatal(err)
	}
	leases, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: a.WorkerID, WaitMs: 1000})
	if err != nil || len(leases) != 1 {
		t.Fatalf("claim with the generated id: %v, %d leases", err, len(leases))
	}
	workers, err := e.ListWorkers(ctx)
	if err != nil || len(workers) != 2 {
		t.Fatalf("workers: %v %v", workers, err)
	}
}

// Cursors are base64url, and following them visits every run once.
func TestListCursorsRoundTrip(t *testing.T) {
	h := newHarness(t, wallClock(), withWorkflows("w1", linear("lin", "1", 1)))
	ctx, e := h.ctx, h.e
	for range 3 {
		if _, err := e.StartRun(ctx, cairn.StartRequest{Workflow: "lin"}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		p, err := e.ListRuns(ctx, ListRequest{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, r := range p.Runs {
			seen[r.ID] = true
		}
		if p.NextCursor == "" {
			break
		}
		if !regexp.MustCompile(CursorPattern).MatchString(p.NextCursor) {
			t.Fatalf("cursor %q does not match %s", p.NextCursor, CursorPattern)
		}
		cursor = p.NextCursor
	}
	if len(seen) != 3 {
		t.Fatalf("visited %d runs, want 3", len(seen))
	}
}

// A store refusing a listing's token is the cursor's fault (422); a store
// refusing every listing is the store's (not a validation error).
func TestListCursorRefusedByTheStore(t *testing.T) {
	ctx := context.Background()
	spy := &spyDriver{Driver: mem.New().Driver()}
	e := newTestEngine(t, blob.NewBucket(spy), Config{})
	cursor := keys.EncodeCursor("runs/01ZZZ")
	spy.listErr = func(o blob.ListOptions) error {
		if o.PageToken != "" {
			return errors.New("400 InvalidArgument: the continuation token provided is incorrect")
		}
		return nil
	}
	_, err := e.ListRuns(ctx, ListRequest{Cursor: cursor})
	wantFieldError(t, "a refused token", err, "cursor")
	spy.listErr = func(blob.ListOptions) error { return errors.New("connection refused") }
	_, err = e.ListRuns(ctx, ListRequest{Cursor: cursor})
	var v cairn.ValidationError
	if err == nil || errors.As(err, &v) {
		t.Fatalf("a store that is down: got %v, want its error", err)
	}
}
