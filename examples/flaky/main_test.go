package main

import (
	"testing"
	"time"

	"github.com/cairn-dev/cairn/examples/internal/example"
	"github.com/cairn-dev/cairn/sdk"
)

func TestFlaky(t *testing.T) {
	ctx, c := example.Start(t, 30*time.Second, newWorker)

	ok := example.StartRun(t, ctx, c, "flaky", sdk.StartOptions{Input: Request{City: "Lisbon"}})
	bad := example.StartRun(t, ctx, c, "flaky", sdk.StartOptions{Input: Request{}})
	f, err := sdk.Result[Forecast](ctx, c, ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Attempts != 3 || f.City != "Lisbon" {
		t.Fatalf("forecast %+v", f)
	}
	r, _ := c.Get(ctx, ok.ID)
	if s := r.Step("fetch_forecast"); s.Failures != 2 || len(s.Attempts) != 3 || s.Attempts[0].Error.Class != sdk.ClassRetryable {
		t.Fatalf("fetch_forecast %+v", s)
	}
	r, err = c.Wait(ctx, bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != sdk.RunFailed || r.Error.Class != "invalid_data" || len(r.Step("validate").Attempts) != 1 {
		t.Fatalf("bad input: %s %+v", r.Status, r.Error)
	}
}
