package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

func TestBench(t *testing.T) {
	for _, layout := range []string{engine.KeyLayoutFlat, engine.KeyLayoutSharded} {
		for _, claimNext := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/claim_next=%v", layout, claimNext), func(t *testing.T) { testBench(t, layout, claimNext) })
		}
	}
}

func testBench(t *testing.T, layout string, claimNext bool) {
	store, counts := counting.Wrap(mem.New())
	rep, err := runBench(context.Background(), store, counts, benchParams{shape: "linear", runs: 3, width: 4, workers: 2, claimNext: claimNext}, nil, layout)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ClaimNext != claimNext {
		t.Fatalf("report claim_next %v, want %v", rep.ClaimNext, claimNext)
	}
	if layout == engine.KeyLayoutSharded {
		runs, err := store.ListAll(context.Background(), "runs/")
		if err != nil || len(runs) != 3 || runs[0].Key[len("runs/")+1] != '/' {
			t.Fatalf("sharded bench runs: %v %v", runs, err)
		}
	}
	if rep.Steps != 12 || rep.StepsPerSec <= 0 || rep.ListPerStep != 0 {
		t.Fatalf("report %+v", rep)
	}
	// The cost contract of a linear step: ≤ 3 GET and ≤ 3 PUT-class.
	if rep.GetPerStep > 3 || rep.PutClassPerStep > 3 || rep.RunWritesPerStep < 1 {
		t.Fatalf("per step: %.2f GET, %.2f PUT-class, %.2f run writes", rep.GetPerStep, rep.PutClassPerStep, rep.RunWritesPerStep)
	}
	// With claim_next a step after its run's first is one write, the run
	// record's, which leases the next step inline: per run of 4 steps, 7
	// PUT-class: the run record's create and its 4 swaps, the run's timer
	// and its first step's lease.
	if claimNext && rep.PutClassPerStep > 7.0/4 {
		t.Fatalf("claim_next: %.2f PUT-class per step, want ≤ 1.75 (no lease object after a run's first step)", rep.PutClassPerStep)
	}
	var out bytes.Buffer
	if err := printBench(&out, rep, true); err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Steps != 12 {
		t.Fatalf("json report %s: %v", out.Bytes(), err)
	}
	if _, err := runBench(context.Background(), store, counts, benchParams{shape: "spiral", runs: 1, width: 1, workers: 1, claimNext: claimNext}, nil, layout); err == nil {
		t.Fatal("unknown shape accepted")
	}
}
