package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob/faults"
	"github.com/cairn-dev/cairn/engine/internal/attrs"
)

// startAttrs starts a run of wf (linear's input) with attributes (JSON
// object text), a millisecond after the previous one (run ids order by
// start time).
func startAttrs(t testing.TB, h *harness, e *Engine, wf, attributes string) string {
	t.Helper()
	var a map[string]json.RawMessage
	if err := json.Unmarshal([]byte(attributes), &a); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Millisecond)
	res, err := e.StartRun(context.Background(), cairn.StartRequest{Workflow: wf, Input: json.RawMessage(`{"n":1}`), Attributes: a})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID
}

// listAttr lists every run that matches req with the attribute
// conditions, following cursors, and returns their ids in order.
func listAttr(t testing.TB, e *Engine, req ListRequest, conds ...string) []string {
	t.Helper()
	req.Attrs = conds
	var ids []string
	for range 100 {
		p, err := e.ListRuns(context.Background(), req)
		if err != nil {
			t.Fatalf("list %v: %v", conds, err)
		}
		for _, r := range p.Runs {
			ids = append(ids, r.ID)
		}
		if req.Cursor = p.NextCursor; req.Cursor == "" {
			return ids
		}
	}
	t.Fatalf("list %v: more than 100 pages", conds)
	return nil
}

// indexKeys are the attribute index entries in the bucket.
func indexKeys(t testing.TB, h *harness) []string {
	t.Helper()
	as, err := h.store.ListAll(h.ctx, attrs.Prefix(h.e.keys))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		out = append(out, a.Key)
	}
	return out
}

func wantIDs(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// Attributes set at start and by a step's complete are in the run view
// and the listing, and a listing filters on them: equality, ranges of
// numbers and times, several conditions, with status and workflow, page
// by page. A changed value's old entry is deleted, and deleting the run
// deletes its entries.
func TestAttributes(t *testing.T) {
	eachStore(t, func(t *testing.T, h *harness) {
		e := h.e
		register(t, e, "w", linear("lin", "1", 2), linear("other", "1", 1))
		a := startAttrs(t, h, e, "lin", `{"customer":"acme","amount":250,"due":"2026-01-02T03:04:05Z","vip":true}`)
		b := startAttrs(t, h, e, "lin", `{"customer":"acme","amount":99.5}`)
		c := startAttrs(t, h, e, "lin", `{"customer":"globex","amount":-3}`)
		d := startAttrs(t, h, e, "other", `{"customer":"acme","amount":1000}`)
		all := ListRequest{}
		wantIDs(t, "customer:acme", listAttr(t, e, all, "customer:acme"), d, b, a) // newest first
		wantIDs(t, "customer:acme limit 1", listAttr(t, e, ListRequest{Limit: 1}, "customer:acme"), d, b, a)
		wantIDs(t, "amount>99.5", listAttr(t, e, all, "amount>99.5"), a, d) // by value
		wantIDs(t, "amount>=99.5", listAttr(t, e, all, "amount>=99.5"), b, a, d)
		wantIDs(t, "amount<100", listAttr(t, e, all, "amount<100"), c, b)
		wantIDs(t, "range", listAttr(t, e, all, "amount>0", "amount<=250"), b, a)
		wantIDs(t, "two names", listAttr(t, e, all, "customer:acme", "amount<500"), b, a)
		wantIDs(t, "workflow", listAttr(t, e, ListRequest{Workflow: "other"}, "customer:acme"), d)
		wantIDs(t, "time", listAttr(t, e, all, "due>=2026-01-01T00:00:00Z"), a)
		wantIDs(t, "bool", listAttr(t, e, all, "vip:true"), a)
		wantIDs(t, "string 250", listAttr(t, e, all, `amount:"250"`))
		wantIDs(t, "missing", listAttr(t, e, all, "customer:initech"))
		if v := getRun(t, e, a).Attributes; string(v["customer"]) != `"acme"` || string(v["amount"]) != "250" {
			t.Fatalf("run view attributes %s", v)
		}

		// A step changes customer and removes vip; the old entries go.
		l := claimOneOf(t, e, a)
		patch := map[string]json.RawMessage{"customer": json.RawMessage(`"initech"`), "vip": json.RawMessage(`null`), "stage": json.RawMessage(`"billed"`)}
		if _, err := e.Complete(h.ctx, l.ID, cairn.CompleteRequest{Attributes: patch}); err != nil {
			t.Fatal(err)
		}
		settleFlows(e)
		wantIDs(t, "customer:initech", listAttr(t, e, all, "customer:initech"), a)
		wantIDs(t, "customer:acme after the change", listAttr(t, e, all, "customer:acme"), d, b)
		wantIDs(t, "vip removed", listAttr(t, e, all, "vip:true"))
		wantIDs(t, "running", listAttr(t, e, ListRequest{Status: cairn.RunRunning}, "stage:billed"), a)
		wantIDs(t, "completed", listAttr(t, e, ListRequest{Status: cairn.RunCompleted}, "stage:billed"))
		if n := len(indexKeys(t, h)); n != 4+2+2+2 {
			t.Fatalf("%d index entries, want 10 (4 of a, 2 of each other run): %v", n, indexKeys(t, h))
		}
		for _, id := range []string{a, b, c, d} {
			if err := e.DeleteRun(h.ctx, id, true); err != nil {
				t.Fatal(err)
			}
		}
		if ks := indexKeys(t, h); len(ks) != 0 {
			t.Fatalf("deleted runs left index entries %v", ks)
		}
	})
}

// claimOneOf claims the ready step of run (its first).
func claimOneOf(t testing.TB, e *Engine, run string) cairn.Lease {
	t.Helper()
	for range 10 {
		l := claimOne(t, e, "w")
		if l.Run == run {
			return l
		}
		if _, err := e.Complete(context.Background(), l.ID, cairn.CompleteRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no lease of run %s in 10 claims", run)
	return cairn.Lease{}
}

// Attributes are checked: names, types, sizes and count.
func TestAttributeValidation(t *testing.T) {
	h := newHarness(t, withWorkflows("w", linear("lin", "1", 1)))
	many := map[string]json.RawMessage{}
	for i := range attrs.MaxPerRun + 1 {
		many[fmt.Sprintf("a%d", i)] = json.RawMessage("1")
	}
	for name, a := range map[string]map[string]json.RawMessage{
		"bad name":   {"1x": json.RawMessage(`"v"`)},
		"object":     {"x": json.RawMessage(`{}`)},
		"long":       {"x": json.RawMessage(`"` + strings.Repeat("v", attrs.MaxStringBytes+1) + `"`)},
		"too many":   many,
		"array":      {"x": json.RawMessage(`[1]`)},
		"long name":  {strings.Repeat("n", attrs.MaxNameLength+1): json.RawMessage(`1`)},
		"not a json": {"x": json.RawMessage(`nope`)},
	} {
		_, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "lin", Attributes: a})
		var ve cairn.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	for _, q := range []string{"", "amount", ":x", "1x:y", "x!y"} {
		if _, err := h.e.ListRuns(h.ctx, ListRequest{Attrs: []string{q}}); err == nil {
			t.Errorf("condition %q was accepted", q)
		}
	}
}

// A writer killed between the index entry and the record leaves an entry
// the record does not hold: queries skip it, and delete it once the
// record has passed its revision. Killed after the record, before the
// old entry's deletion, it leaves a stale entry queries skip and delete.
func TestAttributesCrash(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, onStore(open(t)), withFaults(faults.Profile{}), withWorkflows("w", linear("lin", "1", 3)))
			e, ctl := h.e, h.faults
			run := startAttrs(t, h, e, "lin", `{"customer":"acme"}`)
			l := claimOne(t, e, "w")
			crash := errors.New("instance killed")
			// The index entry is put, the record's swap never happens.
			ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpSwap}, KeyPrefix: e.keys.RunsPrefix(), Times: 1, Err: crash})
			set := func(v string) map[string]json.RawMessage {
				return map[string]json.RawMessage{"customer": json.RawMessage(v)}
			}
			if _, err := e.Complete(h.ctx, l.ID, cairn.CompleteRequest{Attributes: set(`"globex"`)}); err == nil {
				t.Fatal("complete succeeded through an injected crash")
			}
			ctl.Clear()
			e2 := h.peer()
			if n := len(indexKeys(t, h)); n != 2 {
				t.Fatalf("%d index entries after the crash, want 2 (acme and the orphan globex)", n)
			}
			wantIDs(t, "globex after the crash", listAttr(t, e2, ListRequest{}, "customer:globex"))
			wantIDs(t, "acme after the crash", listAttr(t, e2, ListRequest{}, "customer:acme"), run)
			// The worker's retry lands; the orphan (rev 2) is overtaken by
			// the record and deleted by the next query that meets it.
			if _, err := e2.Complete(h.ctx, l.ID, cairn.CompleteRequest{Attributes: set(`"globex"`)}); err != nil {
				t.Fatal(err)
			}
			settleFlows(e2)
			wantIDs(t, "globex after the retry", listAttr(t, e2, ListRequest{}, "customer:globex"), run)
			if ks := indexKeys(t, h); len(ks) != 1 || !strings.Contains(ks[0], "/customer/s"+hexOf("globex")+"/"+run+".") {
				t.Fatalf("index entries %v, want only globex's", ks)
			}
			// Killed after the record, before the old entry's deletion.
			l2 := claimOne(t, e2, "w")
			ctl.Inject(faults.Rule{Ops: []faults.Op{faults.OpDelete}, KeyPrefix: attrs.Prefix(e.keys), Err: crash})
			if _, err := e2.Complete(h.ctx, l2.ID, cairn.CompleteRequest{Attributes: set(`"initech"`)}); err != nil {
				t.Fatal(err)
			}
			settleFlows(e2)
			ctl.Clear()
			if n := len(indexKeys(t, h)); n != 2 {
				t.Fatalf("%d index entries, want 2 (the stale globex and initech)", n)
			}
			wantIDs(t, "globex, stale", listAttr(t, e2, ListRequest{}, "customer:globex"))
			wantIDs(t, "initech", listAttr(t, e2, ListRequest{}, "customer:initech"), run)
			if ks := indexKeys(t, h); len(ks) != 1 {
				t.Fatalf("the query left the stale entry: %v", ks)
			}
		})
	}
}

// A start killed between its index entry and its record leaves an entry
// of a run that does not exist: queries skip it, and delete it once it
// is older than a start can take.
func TestAttributesStartCrash(t *testing.T) {
	h := newHarness(t, withFaults(faults.Profile{}), withWorkflows("w", linear("lin", "1", 1)))
	h.faults.Inject(faults.Rule{Ops: []faults.Op{faults.OpCreate}, KeyPrefix: h.e.keys.RunsPrefix(), Err: errors.New("instance killed")})
	if _, err := h.e.StartRun(h.ctx, cairn.StartRequest{Workflow: "lin", Attributes: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}); err == nil {
		t.Fatal("start succeeded through an injected crash")
	}
	h.faults.Clear()
	wantIDs(t, "k:1", listAttr(t, h.e, ListRequest{}, "k:1"))
	if n := len(indexKeys(t, h)); n != 1 {
		t.Fatalf("%d entries, want the orphan kept while a start may still write its record", n)
	}
	h.clk.Advance(3 * h.e.cfg.MaxRequestTime)
	wantIDs(t, "k:1 later", listAttr(t, h.e, ListRequest{}, "k:1"))
	if ks := indexKeys(t, h); len(ks) != 0 {
		t.Fatalf("the orphan of a start that died long ago is still there: %v", ks)
	}
}

func hexOf(s string) string { return fmt.Sprintf("%x", s) }

// A rerun keeps the old run's attributes, indexed for the new run.
func TestRerunKeepsAttributes(t *testing.T) {
	h := newHarness(t, withWorkflows("w", linear("lin", "1", 1)))
	old := startAttrs(t, h, h.e, "lin", `{"customer":"acme"}`)
	if _, err := h.e.CancelRun(h.ctx, old, "test"); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Millisecond)
	res, err := h.e.RerunRun(h.ctx, old, cairn.RerunRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Run.Attributes["customer"]) != `"acme"` {
		t.Fatalf("rerun attributes %s", res.Run.Attributes)
	}
	wantIDs(t, "customer:acme", listAttr(t, h.e, ListRequest{}, "customer:acme"), res.Run.ID, old)
}
