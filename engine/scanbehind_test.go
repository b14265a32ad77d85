package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/mem"
)

// TestScanWhileLocalHintsTrickle: with no bus, a step made ready on
// instance B, where no claim waits, is found by instance A's fallback scan
// even while A's claims keep getting local work — one step at a time, so
// the worker has free slots. A claim used to scan only when it came back
// empty, so the chaos rounds saw such steps wait 15–29 s behind a trickle
// of local hints (issue #23).
func TestScanWhileLocalHintsTrickle(t *testing.T) {
	ctx := context.Background()
	store := mem.New()
	a := newTestEngine(t, store, Config{FallbackInterval: 200 * time.Millisecond})
	b := newTestEngine(t, store, Config{FallbackInterval: 200 * time.Millisecond})
	register(t, a, "w", linear("chain", "1", 40), single("other", cairn.Step{}))
	register(t, b, "w", linear("chain", "1", 40), single("other", cairn.Step{}))
	mustStart(t, a, "chain", `{"n": 1}`)
	far := mustStart(t, b, "other", `{}`) // its hint is in B's hub only
	start := time.Now()
	for round := 0; ; round++ {
		ls, err := a.Claim(ctx, ClaimRequest{WorkerID: "w", Max: 4, WaitMs: 2000})
		if err != nil {
			t.Fatal(err)
		}
		chain := 0
		for _, l := range ls {
			if l.Run == far {
				t.Logf("the step made ready on B was leased on A after %v, in claim round %d of the 40-step local chain", time.Since(start).Round(time.Millisecond), round)
				if round >= 39 {
					t.Fatalf("leased only once A's local chain was done (round %d): no scan while claims got local hints", round)
				}
				return
			}
			chain++
			if _, err := a.Complete(ctx, l.ID, CompleteRequest{Output: json.RawMessage(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
		if chain == 0 && len(ls) == 0 {
			t.Fatalf("round %d: an empty claim before the far step was leased", round)
		}
		spend(50 * time.Millisecond) // the worker's body
	}
}
