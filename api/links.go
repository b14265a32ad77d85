package api

import (
	"fmt"

	"github.com/danielgtaylor/huma/v2"
)

// specLink is an OpenAPI link: an answer of one operation names
// parameters of another. Clients and tools follow them (the spec fuzzer's
// stateful sequences: start a run, then read, signal and cancel it).
type specLink struct {
	from, status string
	to           []string
	params       map[string]any
}

var (
	runOps      = []string{"getRun", "getRunStatus", "getRunJournal", "sendEvent", "cancelRun", "rerunRun", "deleteRun", "pauseRun", "resumeRun"}
	scheduleOps = []string{"getSchedule", "pauseSchedule", "resumeSchedule", "backfillSchedule", "deleteSchedule"}
	leaseOps    = []string{"stepStarted", "heartbeatStep", "checkpointStep", "completeStep", "failStep"}
)

var specLinks = []specLink{
	{"startRun", "201", runOps, map[string]any{"run": "$response.body#/run/id"}},
	{"rerunRun", "201", runOps, map[string]any{"run": "$response.body#/run/id"}},
	{"listRuns", "200", runOps, map[string]any{"run": "$response.body#/runs/0/id"}},
	{"createSchedule", "201", scheduleOps, map[string]any{"schedule": "$response.body#/id"}},
	{"createBatch", "202", []string{"getBatch"}, map[string]any{"batch": "$response.body#/id"}},
	{"registerWorker", "200", []string{"stopWorker"}, map[string]any{"worker": "$response.body#/worker_id"}},
	{"claimSteps", "200", leaseOps, map[string]any{"lease": "$response.body#/leases/0/id"}},
	{"listWorkflows", "200", []string{"getWorkflow"}, map[string]any{
		"name": "$response.body#/workflows/0/name", "version": "$response.body#/workflows/0/latest"}},
}

// addLinks puts specLinks on the operations' answers. A link whose
// operation or answer is not in the document is a mistake here: it
// panics, and every test that builds the API fails.
func addLinks(doc *huma.OpenAPI) {
	ops := map[string]*huma.Operation{}
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op != nil {
				ops[op.OperationID] = op
			}
		}
	}
	for _, l := range specLinks {
		from := ops[l.from]
		if from == nil || from.Responses[l.status] == nil {
			panic(fmt.Sprintf("api: link from %s %s: no such operation or answer", l.from, l.status))
		}
		r := from.Responses[l.status]
		if r.Links == nil {
			r.Links = map[string]*huma.Link{}
		}
		for _, to := range l.to {
			if ops[to] == nil {
				panic(fmt.Sprintf("api: link from %s to %s: no such operation", l.from, to))
			}
			r.Links[to] = &huma.Link{OperationID: to, Parameters: l.params}
		}
	}
}
