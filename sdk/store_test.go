package sdk

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

type tally struct {
	N int `json:"tally_count"`
}

// Steps of concurrent runs count into one key of the long-term store with
// Update, through their worker's client: no increment is lost, each run's
// memo is listed by prefix, and with a keyring the bucket holds no value
// in the clear (a client without the key reads the envelope).
func TestStoreFromSteps(t *testing.T) {
	ring := testRing(t, "k1")
	e, dir := bucketEnv(t, WithCodec(ring))
	const runs, memo = 12, "MEMO-PLAIN"
	wf := Workflow("count", "1").Task("add", Handle(func(ctx StepContext, in struct{}) (int, error) {
		st, ok := StepStore(ctx, "tally")
		if !ok {
			return 0, fmt.Errorf("no store in a step's context")
		}
		if _, err := st.Put(ctx, "memo:"+ctx.Info().Run, memo, StoreCondition{}); err != nil {
			return 0, err
		}
		var n int
		_, err := st.Update(ctx, "total", func(old json.RawMessage) (any, error) {
			var t tally
			if old != nil {
				if err := json.Unmarshal(old, &t); err != nil {
					return nil, err
				}
			}
			t.N++
			n = t.N
			return t, nil
		})
		return n, err
	}))
	serve(t, NewWorker(e.client(t, WithCodec(ring)), WithLogger(quiet()), WithConcurrency(6)).Register(wf))
	var wg sync.WaitGroup
	for range runs {
		r := start(t, e.c, "count", StartOptions{})
		wg.Go(func() {
			if got := waitRun(t, e.c, r.ID, 30*time.Second); got.Status != RunCompleted {
				t.Errorf("run %s: %s %v", r.ID, got.Status, got.Error)
			}
		})
	}
	wg.Wait()
	st := e.c.Store("tally")
	got, err := st.Get(t.Context(), "total")
	if err != nil {
		t.Fatal(err)
	}
	var tl tally
	if err := json.Unmarshal(got.Value, &tl); err != nil || tl.N != runs {
		t.Fatalf("total = %s %v, want %d increments", got.Value, err, runs)
	}
	n := 0
	for k, err := range st.Keys(t.Context(), "memo:") {
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.Get(t.Context(), k.Key)
		if err != nil || string(m.Value) != `"`+memo+`"` {
			t.Fatalf("%s = %s %v", k.Key, m.Value, err)
		}
		n++
	}
	if n != runs {
		t.Fatalf("listed %d memos, want %d", n, runs)
	}
	if hits := bucketHolds(t, dir, memo); len(hits) > 0 {
		t.Fatalf("the bucket holds the plaintext in %v", hits)
	}
	if hits := bucketHolds(t, dir, "tally_count"); len(hits) > 0 {
		t.Fatalf("the bucket holds the counter's plaintext in %v", hits)
	}
	raw, err := e.client(t).Store("tally").Get(t.Context(), "total")
	if err != nil || !json.Valid(raw.Value) || string(raw.Value) == string(got.Value) {
		t.Fatalf("a client without the keyring read %s %v, want the envelope", raw.Value, err)
	}
	if err := st.Delete(t.Context(), "total", raw.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), "total"); !IsNotFound(err) {
		t.Fatalf("after delete: %v, want not found", err)
	}
	if _, err := st.Put(t.Context(), "total", 1, StoreCondition{IfVersion: raw.Version}); !IsConflict(err) {
		t.Fatalf("a write over a deleted version: %v, want a conflict", err)
	}
}
