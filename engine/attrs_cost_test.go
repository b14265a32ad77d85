package engine

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/counting"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// attrRuns is how many runs TestAttributeRequests queries over.
const attrRuns = 10_000

// The bucket requests of search attributes, counted: what an indexed
// attribute adds to a write, and what a query costs over attrRuns runs
// (docs/PERFORMANCE.md, "Search attributes"). Run it with
//
//	go test -count=1 -run TestAttributeRequests -v ./engine/
func TestAttributeRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 10,000 runs")
	}
	h := newHarness(t, counted(), withWorkflows("w", linear("lin", "1", 2), linear("lin4", "1", 4)))
	e, c := h.e, h.counts
	start := func(a string) (string, counting.Snapshot) {
		var m map[string]json.RawMessage
		if a != "" {
			json.Unmarshal([]byte(a), &m)
		}
		e.Settle()
		before := c.Snapshot()
		h.clk.Advance(1)
		res, err := e.StartRun(h.ctx, cairn.StartRequest{Workflow: "lin", Input: json.RawMessage(`{"n":1}`), Attributes: m})
		if err != nil {
			t.Fatal(err)
		}
		e.Settle()
		return res.Run.ID, c.Snapshot().Sub(before)
	}
	start("") // the definition's first read
	_, plain := start("")
	_, one := start(`{"customer":"c0"}`)
	_, four := start(`{"customer":"c0","amount":1,"region":"eu","due":"2026-01-01T00:00:00Z"}`)
	t.Logf("start without attributes: %v", plain)
	t.Logf("start with 1 attribute:   %v", one)
	t.Logf("start with 4 attributes:  %v", four)
	if d := one.Sub(plain); d.Total() != 1 || d.Put != 1 {
		t.Errorf("an attribute at start cost %v more, want one PUT", d)
	}
	if d := four.Sub(plain); d.Total() != 4 || d.Put != 4 {
		t.Errorf("4 attributes at start cost %v more, want 4 PUTs", d)
	}
	changeCosts(t, h)

	for i := range attrRuns - 3 {
		start(fmt.Sprintf(`{"customer":"c%d","amount":%d}`, i%100, i))
	}
	query := func(name string, req ListRequest, want int) string {
		t.Helper()
		before := c.Snapshot()
		p, err := e.ListRuns(h.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		d := c.Snapshot().Sub(before)
		t.Logf("%s over %d runs: %d runs, %v", name, attrRuns, len(p.Runs), d)
		if len(p.Runs) != want || d.List != keys.Shards || d.Reads() != int64(want) || d.Total() != d.List+d.Reads() {
			t.Errorf("%s: %d runs in %v, want %d runs in %d LISTs and %d GETs", name, len(p.Runs), d, want, keys.Shards, want)
		}
		return p.NextCursor
	}
	next := query("customer:c42 (100 runs), limit 50", ListRequest{Attrs: []string{"customer:c42"}, Limit: 50}, 50)
	query("customer:c42, its second page", ListRequest{Attrs: []string{"customer:c42"}, Limit: 50, Cursor: next}, 50)
	query("amount>=9950 (47 runs)", ListRequest{Attrs: []string{"amount>=9950"}}, 47)
	query("amount>=5000 and amount<5010, limit 50", ListRequest{Attrs: []string{"amount>=5000", "amount<5010"}}, 10)
	before := c.Snapshot()
	p, err := e.ListRuns(h.ctx, ListRequest{Correlation: "none", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("for comparison, a listing filtered by correlation (not indexed): one page of %d runs, cursor %v, %v", len(p.Runs), p.NextCursor != "", c.Snapshot().Sub(before))
}

// changeCosts counts what a step's complete adds when it sets a new
// attribute, changes one, or sets one to the value it has.
func changeCosts(t *testing.T, h *harness) {
	e, c := h.e, h.counts
	h.clk.Advance(1)
	run := mustStart(t, e, "lin4", `{"n":1}`)
	complete := func(a string) counting.Snapshot {
		var m map[string]json.RawMessage
		if a != "" {
			json.Unmarshal([]byte(a), &m)
		}
		l := claimOneOf(t, e, run)
		e.Settle()
		before := c.Snapshot()
		if _, err := e.Complete(h.ctx, l.ID, cairn.CompleteRequest{Attributes: m}); err != nil {
			t.Fatal(err)
		}
		settleFlows(e)
		e.Settle()
		return c.Snapshot().Sub(before)
	}
	plain := complete("")
	set := complete(`{"stage":"a"}`)
	same := complete(`{"stage":"a"}`)
	changed := complete(`{"stage":"b"}`)
	t.Logf("complete without attributes: %v", plain)
	t.Logf("complete setting a new one:  %v", set)
	t.Logf("complete, the same value:    %v", same)
	t.Logf("complete changing one:       %v", changed)
	if d := set.Sub(plain); d.Total() != 1 || d.Put != 1 {
		t.Errorf("setting an attribute cost %v more, want one PUT", d)
	}
	if d := same.Sub(plain); d.Total() != 0 {
		t.Errorf("setting an attribute to its value cost %v more, want nothing", d)
	}
	if d := changed.Sub(plain); d.Total() != 2 || d.Put != 1 || d.Delete != 1 {
		t.Errorf("changing an attribute cost %v more, want a PUT and a DELETE", d)
	}
}
