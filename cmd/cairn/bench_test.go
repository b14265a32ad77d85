package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
)

func TestBench(t *testing.T) {
	for _, layout := range []string{engine.KeyLayoutFlat, engine.KeyLayoutSharded} {
		t.Run(layout, func(t *testing.T) { testBench(t, layout) })
	}
}

func testBench(t *testing.T, layout string) {
	store, counts := counting.Wrap(mem.New())
	rep, err := runBench(context.Background(), store, counts, "linear", 3, 4, 2, nil, layout)
	if err != nil {
		t.Fatal(err)
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
	var out bytes.Buffer
	if err := printBench(&out, rep, true); err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Steps != 12 {
		t.Fatalf("json report %s: %v", out.Bytes(), err)
	}
	if _, err := runBench(context.Background(), store, counts, "spiral", 1, 1, 1, nil, layout); err == nil {
		t.Fatal("unknown shape accepted")
	}
}
