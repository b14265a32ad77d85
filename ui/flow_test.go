package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/api"
)

// The run page shows the run's priority and each step's flow control
// from the definition; the runs list shows a non-zero priority; keys
// that carry markup are escaped.
func TestFlowControlOnRunPages(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	ctx := context.Background()
	prio := -7
	wf := cairn.Workflow{Name: "flow", Version: "1",
		Concurrency: []cairn.ConcurrencyLimit{{Key: "${input.tenant}", Limit: 9}},
		Steps: []cairn.Step{
			{ID: "charge", Concurrency: &cairn.ConcurrencyLimit{Key: "${input.customer}<b>x</b>", Limit: 2},
				RateLimit: &cairn.RateLimit{Key: "${input.api}", Limit: 10, Period: cairn.Duration(time.Minute), Burst: 3}, Priority: &prio},
			{ID: "plain", After: []string{"charge"}},
		}}
	f.registerFor("w1", wf)
	hi, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "flow", Priority: 42})
	if err != nil {
		t.Fatal(err)
	}
	zero, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "flow"})
	if err != nil {
		t.Fatal(err)
	}

	st, body, _ := f.get("/ui/runs/"+hi.Run.ID, "")
	if st != 200 {
		t.Fatalf("run page: %d %.300s", st, body)
	}
	for _, want := range []string{
		`<dd id="run-priority">42</dd>`,
		`<dd id="workflow-flow">at most 9 at once per key ${input.tenant}</dd>`,
		`<td class="flow">at most 2 at once per key ${input.customer}&lt;b&gt;x&lt;/b&gt;; rate 10 per 1m0s, burst 3 per key ${input.api}; priority -7</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
	if strings.Contains(body, "<b>x</b>") {
		t.Error("run page renders a concurrency key as HTML")
	}
	// The plain step has no flow control: an empty cell.
	if i := strings.Index(body, `<tr id="step-plain" data-step="plain"`); i < 0 || !strings.Contains(body[i:], `<td class="flow"></td>`) {
		t.Error("plain step: want an empty flow-control cell")
	}
	// Priority 0 is not shown on the run page.
	if _, body, _ := f.get("/ui/runs/"+zero.Run.ID, ""); strings.Contains(body, `id="run-priority"`) {
		t.Error("run page shows priority 0")
	}

	_, body, _ = f.get("/ui/", "")
	rowOf := func(id string) string {
		i := strings.Index(body, `<tr data-run="`+id+`"`)
		if i < 0 {
			t.Fatalf("runs page lacks run %s", id)
		}
		j := strings.Index(body[i:], "</tr>")
		return body[i : i+j]
	}
	if r := rowOf(hi.Run.ID); !strings.Contains(r, `<td class="priority">42</td>`) {
		t.Errorf("runs list row lacks priority 42: %s", r)
	}
	if r := rowOf(zero.Run.ID); !strings.Contains(r, `<td class="priority"></td>`) {
		t.Errorf("runs list row shows a priority for priority 0: %s", r)
	}
	// The single-run listing (a search by id) shows it too.
	if _, body, _ := f.get("/ui/?q="+hi.Run.ID, ""); !strings.Contains(body, `<td class="priority">42</td>`) {
		t.Error("search by run id lacks the priority")
	}
}

// The batch page reads a batch through the engine: filter, progress,
// counters and state; bad and unknown ids are 4xx pages.
func TestBatchPage(t *testing.T) {
	f := newFixture(t, api.Config{DevMode: true})
	f.register()
	ctx := context.Background()
	var ids []string
	for range 3 {
		r, err := f.e.StartRun(ctx, cairn.StartRequest{Workflow: "wf"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Run.ID)
	}
	b, err := f.e.Batches().Start(ctx, cairn.BatchRequest{Action: cairn.BatchCancel,
		Filter: cairn.BatchFilter{Workflow: "wf", Status: []cairn.RunStatus{cairn.RunRunning}}, Reason: "drain <now>"})
	if err != nil {
		t.Fatal(err)
	}
	// The first page ran inline; the reaper finishes a batch that is not
	// done yet.
	deadline := time.Now().Add(10 * time.Second)
	for b.State != cairn.BatchDone {
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", b.State)
		}
		if _, err := f.e.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		if b, err = f.e.Batches().Get(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	st, body, _ := f.get("/ui/batches/"+b.ID, "")
	if st != 200 {
		t.Fatalf("batch page: %d %.300s", st, body)
	}
	for _, want := range []string{
		`data-batch="` + b.ID + `" data-state="done"`,
		`<dd id="batch-action">cancel</dd>`,
		`status running; workflow wf; started before `,
		`<dd id="batch-reason">drain &lt;now&gt;</dd>`,
		`, the listing is done</dd>`,
		`<tbody><tr><td>3</td><td>3</td><td>3</td><td>0</td><td>0</td></tr></tbody>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("batch page lacks %s", want)
		}
	}
	if strings.Contains(body, "<now>") {
		t.Error("batch page renders the reason as HTML")
	}
	for _, id := range ids {
		r, err := f.e.GetRun(ctx, id)
		if err != nil || r.Status != cairn.RunCancelled {
			t.Errorf("run %s: %v %v, want cancelled", id, r.Status, err)
		}
	}
	for path, want := range map[string]int{"/ui/batches/01ARZ3NDEKTSV4RRFFQ69G5FAV": 404, "/ui/batches/bad!id": 400} {
		if st, body, _ := f.get(path, ""); st != want {
			t.Errorf("%s: %d, want %d: %.200s", path, st, want, body)
		}
	}
}
