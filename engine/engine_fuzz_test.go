package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// FuzzParseLeaseID: any string is refused or parsed into a token that
// obeys the id rules; nothing panics.
func FuzzParseLeaseID(f *testing.F) {
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"r":"7YBQ8BJD03WTTD0XEM50YZFHTH","s":"slow","n":1,"w":"worker1-g1","t":1796089498642,"k":"QuI8_0ewXhH6DgajJr9S2g"}`)))
	f.Add("")
	f.Add("not base64!")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"n":1e9}`)))
	f.Fuzz(func(t *testing.T, id string) {
		tok, err := keys.ParseLease(id)
		if err != nil {
			if !errors.Is(err, keys.ErrBadLease) {
				t.Fatalf("error %v is not keys.ErrBadLease", err)
			}
			return
		}
		if tok.Attempt < 1 || tok.Attempt > 999_999 || len(tok.Nonce) != 22 || !keys.RunID.Valid(tok.Run) ||
			!keys.StepID.Valid(tok.Step) || !keys.WorkerID.Valid(tok.Worker) {
			t.Fatalf("accepted a malformed lease id: %+v", tok)
		}
	})
}

// FuzzRunRecord: any stored run record either fails to decode or
// decodes into one the engine can show; nothing panics.
func FuzzRunRecord(f *testing.F) {
	f.Add([]byte(`{"id":"7YBQ8BJD03WTTD0XEM50YZFHTH","workflow":"w","version":"1","status":"running","steps":{"a":{"status":"ready","attempt":1}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"steps":{"a":{"attempts":[{"n":1,"outcome":"lost"}]}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var rec runRecord
		if json.Unmarshal(raw, &rec) != nil {
			return
		}
		if _, err := json.Marshal(&rec); err != nil {
			t.Fatalf("a decoded record does not encode again: %v", err)
		}
	})
}

// FuzzWorkflow: validation never panics, and a definition it accepts is
// registered, starts, and its ready steps can be claimed and completed.
func FuzzWorkflow(f *testing.F) {
	for _, s := range []string{
		`{"name":"w","version":"1","steps":[{"id":"a"},{"id":"b","after":["a"]}]}`,
		`{"name":"w","version":"1","steps":[{"id":"a","input":{"x":"${input.x}"}},{"id":"s","kind":"sleep","duration":"1ms","after":["a"]}]}`,
		`{"name":"w","version":"1","steps":[{"id":"a","delivery":"at_most_once","retry":{"max_attempts":3}},{"id":"w","kind":"wait","event":"go"}]}`,
		`{"name":"w","version":"1","steps":[{"id":"a","after":["a"]}]}`,
		`{"name":"","steps":[]}`,
	} {
		f.Add(s)
	}
	e := newTestEngine(f, nil, Config{})
	f.Fuzz(func(t *testing.T, def string) {
		var wf cairn.Workflow
		if json.Unmarshal([]byte(def), &wf) != nil {
			return
		}
		if wf.Validate("workflow") != nil {
			return
		}
		ctx := context.Background()
		worker := "fuzz-worker"
		if _, err := e.Register(ctx, cairn.RegisterRequest{WorkerID: worker, Workflows: []cairn.Workflow{wf}}); err != nil {
			var ce *ConflictError
			if errors.As(err, &ce) {
				return // the same name and version, registered earlier with another definition
			}
			t.Fatalf("register of a valid definition: %v", err)
		}
		res, err := e.StartRun(ctx, cairn.StartRequest{Workflow: wf.Name, Version: wf.Version, Input: json.RawMessage(`{"x":1}`)})
		if err != nil {
			t.Fatalf("start of a valid definition: %v", err)
		}
		for range 20 {
			ls, err := e.Claim(ctx, cairn.ClaimRequest{WorkerID: worker, Max: 10})
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if len(ls) == 0 {
				break
			}
			for _, l := range ls {
				if _, err := e.Started(ctx, l.ID); err != nil {
					t.Fatalf("started: %v", err)
				}
				if _, err := e.Complete(ctx, l.ID, cairn.CompleteRequest{Output: json.RawMessage(`{"ok":true}`)}); err != nil && !isRefusal(err) {
					t.Fatalf("complete: %v", err)
				}
			}
		}
		if _, err := e.GetRun(ctx, res.Run.ID); err != nil {
			t.Fatalf("get run: %v", err)
		}
	})
}

// isRefusal reports whether err is a worker-protocol refusal (a 409).
func isRefusal(err error) bool {
	var r *cairn.Rejection
	return errors.As(err, &r)
}
