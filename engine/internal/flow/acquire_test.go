package flow

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
	"github.com/cairn-dev/cairn/notify"
)

func mustTemplate(t *testing.T, src string) *render.Template {
	t.Helper()
	tpl, err := render.Compile(json.RawMessage(src))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// claimOf is a claim of attempt 1 of step s of run, never claimed before.
func claimOf(run string, vars render.Vars, giveBack func([]string)) Claim {
	return Claim{Step: "s", Vars: vars, At: time.Now(), Hint: notify.Hint{Run: run, Step: "s", Attempt: 1},
		Holder:  Holder{Run: run, Step: "s", Attempt: 1, Tag: Tag("n-" + run)},
		Claimed: func(context.Context) (bool, error) { return false, nil }, GiveBack: giveBack}
}

// A concurrency limit: the first claim takes the slot, the second is
// parked and handed back delayed; releasing the first wakes it, due now.
// A key that does not render is a RenderError.
func TestAcquireConcurrencyAndRelease(t *testing.T) {
	ctx := context.Background()
	tbl := NewTable(mem.New(), keys.Layout{}, time.Now, func(context.Context, Holder) (bool, error) { return false, nil })
	sf := &Step{Limits: []Limit{{Scope: "w", Field: "concurrency[0].key", Key: mustTemplate(t, `"${input.k}"`), Limit: 1}}}
	vars := render.Vars{Input: json.RawMessage(`{"k":"a"}`)}
	noGiveBack := func(taken []string) { t.Errorf("gave back %v", taken) }
	ok, taken, back, err := tbl.Acquire(ctx, sf, claimOf("r1", vars, noGiveBack))
	if !ok || len(taken) != 1 || back != nil || err != nil {
		t.Fatalf("first claim: %v %v %v %v; want the slot", ok, taken, back, err)
	}
	ok, _, back, err = tbl.Acquire(ctx, sf, claimOf("r2", vars, func([]string) {}))
	if ok || back == nil || back.Run != "r2" || back.NotBefore.IsZero() || err != nil {
		t.Fatalf("second claim: %v %v %v; want its hint back, delayed", ok, back, err)
	}
	var woke []notify.Hint
	tbl.ReleaseAll(ctx, taken, func(h Holder) bool { return h.Is("r1", "s", 1, "n-r1") }, func(err error) { t.Error(err) },
		func(h notify.Hint) { woke = append(woke, h) })
	if len(woke) != 1 || woke[0].Run != "r2" || !woke[0].NotBefore.IsZero() {
		t.Fatalf("woke %+v; want r2's hint, due now", woke)
	}
	if ok, _, _, err := tbl.Acquire(ctx, sf, claimOf("r2", vars, noGiveBack)); !ok || err != nil {
		t.Fatalf("after the release: %v, %v; want the slot", ok, err)
	}
	var re *RenderError
	if _, _, _, err := tbl.Acquire(ctx, sf, claimOf("r3", render.Vars{Input: json.RawMessage(`{}`)}, noGiveBack)); !errors.As(err, &re) {
		t.Fatalf("a key that does not render: %v; want a RenderError", err)
	}
}

// A rate limit: no grant is spent on an attempt already claimed; past
// the limit the hint comes back at the next grant.
func TestAcquireRate(t *testing.T) {
	ctx := context.Background()
	tbl := NewTable(mem.New(), keys.Layout{}, time.Now, nil)
	sf := &Step{Rate: &Rate{Scope: "w", Field: "rate_limit", Limit: 1, Period: time.Hour, Burst: 1}}
	won := claimOf("r0", render.Vars{}, nil)
	won.Claimed = func(context.Context) (bool, error) { return true, nil }
	if ok, _, back, err := tbl.Acquire(ctx, sf, won); ok || back != nil || err != nil {
		t.Fatalf("an attempt already claimed: %v %v %v; want nothing", ok, back, err)
	}
	if ok, _, _, err := tbl.Acquire(ctx, sf, claimOf("r1", render.Vars{}, nil)); !ok || err != nil {
		t.Fatalf("first claim: %v, %v; want the grant", ok, err)
	}
	ok, _, back, err := tbl.Acquire(ctx, sf, claimOf("r2", render.Vars{}, nil))
	if ok || back == nil || !back.NotBefore.After(time.Now().Add(time.Hour/2)) || err != nil {
		t.Fatalf("second claim: %v %v %v; want its hint back at the next grant", ok, back, err)
	}
}
