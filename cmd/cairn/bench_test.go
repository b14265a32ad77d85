package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/blob/mem"
)

func TestBench(t *testing.T) {
	store, counts := counting.Wrap(mem.New())
	rep, err := runBench(context.Background(), store, counts, "linear", 3, 4, 2, nil)
	if err != nil {
		t.Fatal(err)
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
	if _, err := runBench(context.Background(), store, counts, "spiral", 1, 1, 1, nil); err == nil {
		t.Fatal("unknown shape accepted")
	}
}
