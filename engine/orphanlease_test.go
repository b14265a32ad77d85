package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/blob/mem"
)

// A claim's create-only lease write that landed but whose answer the claim
// never saw must not leave the step leased to nobody. Without a reaper (as
// in TestConcurrentClaimersExactlyOnce) nothing else ever frees the lease;
// with one the step waits LeaseTTL+RecoveryWindow and burns an attempt.
func TestClaimDoesNotOrphanItsOwnLease(t *testing.T) {
	cases := map[string][]faults.Rule{
		// The GCS and Azure drivers retry a conditional write whose answer
		// was lost; the retry meets the first attempt's object: 412
		// (blob/gcs/gcs.go, "re-read and re-decide").
		"retry-meets-own-write": {{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "leases/", After: true, Times: 1,
			Err: retriedPrecondition()}},
		// The outcome is unknown and the read-back fails too: the hint is
		// put back and the next claimOne's create meets the lease.
		"unknown-and-read-back-fails": {
			{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: "leases/", After: true, Times: 1},
			{Ops: []faults.Op{faults.OpGet}, KeyPrefix: "leases/", Times: 1},
		},
	}
	for name, rules := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store, ctl := faults.Wrap(mem.New(), faults.Profile{})
			e := newTestEngine(t, store, Config{FallbackInterval: 50 * time.Millisecond})
			register(t, e, "w", linear("one", "1", 1))
			run := mustStart(t, e, "one", `{"n":1}`)
			ctl.Inject(rules...)
			deadline := time.Now().Add(3 * time.Second) // 60 fallback intervals
			for time.Now().Before(deadline) {
				ls, err := e.Claim(ctx, ClaimRequest{WorkerID: "w", WaitMs: 500})
				if err != nil {
					t.Fatal(err)
				}
				if len(ls) == 1 {
					if ls[0].Run != run || ls[0].Attempt != 1 {
						t.Fatalf("got %+v", ls[0])
					}
					if _, err := e.Started(ctx, ls[0].ID); err != nil {
						t.Fatalf("the lease handed out is not the stored one: %v", err)
					}
					return
				}
			}
			o, err := store.Get(ctx, e.keys.Lease(run, "sa", 1))
			t.Fatalf("step sa of %s was not leased in 3 s (60 fallback intervals); lease object: %s (err %v)", run, objData(o), err)
		})
	}
}

func objData(o *blob.Object) string {
	if o == nil {
		return "<none>"
	}
	return string(o.Data)
}

func retriedPrecondition() error {
	// What blob/gcs now returns for a 412 after more than one attempt.
	return fmt.Errorf("%w: %w", blob.ErrRetriedWrite, blob.ErrPreconditionFailed)
}
