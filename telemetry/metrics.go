package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cairn-dev/cairn"
)

// instruments are the engine's metrics. Names and meanings are listed in
// docs/OPERATIONS.md; a test holds the two together.
type instruments struct {
	runsStarted, runsEnded                      metric.Int64Counter
	attemptsEnded, requeued, lost, deadLettered metric.Int64Counter
	retried                                     metric.Int64Counter
	claims, leases                              metric.Int64Counter
	claimHold                                   metric.Float64Histogram
	rejections                                  metric.Int64Counter
	requests                                    metric.Float64Histogram
	commitBatch                                 metric.Int64Histogram
	casRetries                                  metric.Int64Counter
	reapDuration                                metric.Float64Histogram
	reapItems                                   metric.Int64Counter
	blobRequests                                metric.Int64Counter
	blobDuration                                metric.Float64Histogram
	published, received                         metric.Int64Counter
	dropped                                     metric.Int64Counter
	wake                                        metric.Float64Histogram
	waiting                                     metric.Int64UpDownCounter
}

// Metric names.
const (
	MetricRunsStarted   = "cairn.runs.started"
	MetricRunsEnded     = "cairn.runs.ended"
	MetricAttemptsEnded = "cairn.attempts.ended"
	MetricRetried       = "cairn.steps.retried"
	MetricRequeued      = "cairn.steps.requeued"
	MetricLost          = "cairn.steps.lost"
	MetricDeadLettered  = "cairn.steps.dead_lettered"
	MetricClaims        = "cairn.claims"
	MetricLeases        = "cairn.leases.granted"
	MetricClaimHold     = "cairn.claim.hold"
	MetricRejections    = "cairn.api.rejections"
	MetricRequests      = "cairn.api.request.duration"
	MetricCommitBatch   = "cairn.commit.batch_size"
	MetricCASRetries    = "cairn.commit.cas_retries"
	MetricReapDuration  = "cairn.reaper.pass.duration"
	MetricReapItems     = "cairn.reaper.items"
	MetricBlobRequests  = "cairn.blob.requests"
	MetricBlobDuration  = "cairn.blob.request.duration"
	MetricPublished     = "cairn.notify.published"
	MetricReceived      = "cairn.notify.received"
	MetricDropped       = "cairn.notify.dropped"
	MetricWakeLatency   = "cairn.claim.wake_latency"
	MetricClaimsWaiting = "cairn.claims.waiting"
)

func newInstruments(m metric.Meter) (*instruments, error) {
	var errs []error
	c := func(name, unit, desc string) metric.Int64Counter {
		x, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return x
	}
	secs := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		x, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return x
	}
	fast := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	hold := []float64{0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 30}
	batch, err := m.Int64Histogram(MetricCommitBatch, metric.WithUnit("{mutation}"),
		metric.WithDescription("Mutations written by one run-record write (group commit)."),
		metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256))
	errs = append(errs, err)
	waiting, err := m.Int64UpDownCounter(MetricClaimsWaiting, metric.WithUnit("{claim}"),
		metric.WithDescription("Claim requests in progress now: held, waiting for work, or claiming."))
	errs = append(errs, err)
	in := &instruments{
		waiting:       waiting,
		runsStarted:   c(MetricRunsStarted, "{run}", "Runs started."),
		runsEnded:     c(MetricRunsEnded, "{run}", "Runs ended, by status."),
		attemptsEnded: c(MetricAttemptsEnded, "{attempt}", "Attempts ended, by outcome and error class."),
		retried:       c(MetricRetried, "{attempt}", "Failed attempts that scheduled a retry, by error class."),
		requeued:      c(MetricRequeued, "{attempt}", "Attempts handed back by a worker that does not serve the step (no retry budget spent)."),
		lost:          c(MetricLost, "{attempt}", "Attempts whose lease expired unanswered (recovered by the reaper)."),
		deadLettered:  c(MetricDeadLettered, "{step}", "Steps that failed for good (retries exhausted or not retryable), by error class."),
		claims:        c(MetricClaims, "{claim}", "Claim requests, by result: held (returned leases), empty, error."),
		leases:        c(MetricLeases, "{lease}", "Leases granted, by claims and by completes that claim the next step (claim_next)."),
		claimHold:     secs(MetricClaimHold, "How long a claim request was held before it answered.", hold...),
		rejections:    c(MetricRejections, "{request}", "Worker calls refused with 409, by reason."),
		requests:      secs(MetricRequests, "API request duration, by operation and status.", fast...),
		commitBatch:   batch,
		casRetries:    c(MetricCASRetries, "{write}", "Run-record writes that lost a compare-and-swap (or met a retryable store error) and were tried again."),
		reapDuration:  secs(MetricReapDuration, "Duration of one reaper pass.", fast...),
		reapItems:     c(MetricReapItems, "{item}", "What reaper passes did, by kind: timers_due, runs_visited, leases_lost, attempts_timed_out, announced, timers_fired, errors."),
		blobRequests:  c(MetricBlobRequests, "{request}", "Object-store requests, by op, billing class (put, get, free) and result (ok, not_found, precondition_failed, error)."),
		blobDuration:  secs(MetricBlobDuration, "Object-store request duration, by op.", fast...),
		published:     c(MetricPublished, "{hint}", "Hints, change and registration notices published on the bus."),
		received:      c(MetricReceived, "{hint}", "Hints, change and registration notices received from the bus."),
		dropped:       c(MetricDropped, "{hint}", "Hints and change notices lost on the way, by kind and reason: publish_failed (the bus refused them; this instance's claims still get its hints), evicted (an instance's pool of hints pruned for age or number)."),
		wake:          secs(MetricWakeLatency, "From a hint becoming claimable on an instance (arrived, or its retry backoff ended) to the claim that took it answering.", fast...),
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

var bg = context.Background()

func (m *instruments) journal(r Run, j cairn.JournalEntry, a *cairn.Attempt, ended bool) {
	wf := attribute.String("workflow", r.Workflow)
	class := func() attribute.KeyValue {
		if j.Error != nil {
			return attribute.String("class", j.Error.Class)
		}
		return attribute.String("class", "")
	}
	switch j.Type {
	case cairn.JournalRunStarted:
		m.runsStarted.Add(bg, 1, metric.WithAttributes(wf))
	case cairn.JournalRunCompleted, cairn.JournalRunFailed, cairn.JournalRunCancelled, cairn.JournalRunTimedOut:
		m.runsEnded.Add(bg, 1, metric.WithAttributes(wf, attribute.String("status", runStatus(j.Type))))
	}
	switch j.Type {
	case cairn.JournalStepRequeued:
		m.requeued.Add(bg, 1, metric.WithAttributes(wf))
	case cairn.JournalLeaseLost:
		m.lost.Add(bg, 1, metric.WithAttributes(wf))
	case cairn.JournalStepRetryScheduled:
		m.retried.Add(bg, 1, metric.WithAttributes(wf, class()))
	case cairn.JournalStepFailed:
		m.deadLettered.Add(bg, 1, metric.WithAttributes(wf, class()))
	}
	if a != nil && j.Attempt > 0 && !ended && endsAttempt(j.Type) {
		cl := ""
		if a.Error != nil {
			cl = a.Error.Class
		}
		m.attemptsEnded.Add(bg, 1, metric.WithAttributes(wf, attribute.String("outcome", string(a.Outcome)), attribute.String("class", cl)))
	}
}

func endsAttempt(t cairn.JournalType) bool {
	switch t {
	case cairn.JournalStepCompleted, cairn.JournalStepFailed, cairn.JournalStepRequeued,
		cairn.JournalStepRetryScheduled, cairn.JournalLeaseLost, cairn.JournalStepSuspended:
		return true
	}
	return false
}

// Claimed records one claim request: the leases it returned (0: empty),
// whether it failed, and how long it was held.
func (t *T) Claimed(leases int, failed bool, held time.Duration) {
	if t == nil || t.m == nil {
		return
	}
	result := "held"
	switch {
	case failed:
		result = "error"
	case leases == 0:
		result = "empty"
	}
	t.m.claims.Add(bg, 1, metric.WithAttributes(attribute.String("result", result)))
	if leases > 0 {
		t.m.leases.Add(bg, int64(leases))
	}
	t.m.claimHold.Record(bg, held.Seconds(), metric.WithAttributes(attribute.String("result", result)))
}

// Granted records leases handed out other than by a claim request: a
// complete's eager dispatch (claim_next).
func (t *T) Granted(leases int) {
	if t == nil || t.m == nil || leases <= 0 {
		return
	}
	t.m.leases.Add(bg, int64(leases))
}

// Request records one API call: its operation, status, duration and, for
// a refused worker call, the reason.
func (t *T) Request(op string, status int, took time.Duration, reason string) {
	if t == nil || t.m == nil {
		return
	}
	t.m.requests.Record(bg, took.Seconds(), metric.WithAttributes(attribute.String("op", op), attribute.Int("status", status)))
	if status == 409 {
		t.m.rejections.Add(bg, 1, metric.WithAttributes(attribute.String("op", op), attribute.String("reason", reason)))
	}
}

// Committed records one run-record write: how many mutations it carried
// and how many times it was tried again before it landed.
func (t *T) Committed(batch, retries int) {
	if t == nil || t.m == nil {
		return
	}
	t.m.commitBatch.Record(bg, int64(batch))
	if retries > 0 {
		t.m.casRetries.Add(bg, int64(retries))
	}
}

// Reaped records one reaper pass; items maps each kind to its count.
func (t *T) Reaped(took time.Duration, items map[string]int) {
	if t == nil || t.m == nil {
		return
	}
	t.m.reapDuration.Record(bg, took.Seconds())
	for k, n := range items {
		if n > 0 {
			t.m.reapItems.Add(bg, int64(n), metric.WithAttributes(attribute.String("kind", k)))
		}
	}
}

// Published and Received count bus traffic by kind (hint, change,
// registration).
func (t *T) Published(kind string, n int) {
	if t == nil || t.m == nil || n == 0 {
		return
	}
	t.m.published.Add(bg, int64(n), metric.WithAttributes(attribute.String("kind", kind)))
}

// Received counts one message received from the bus.
func (t *T) Received(kind string) {
	if t == nil || t.m == nil {
		return
	}
	t.m.received.Add(bg, 1, metric.WithAttributes(attribute.String("kind", kind)))
}

// Dropped counts n hints (kind hint, change or registration) lost for
// reason.
func (t *T) Dropped(kind, reason string, n int) {
	if t == nil || t.m == nil || n <= 0 {
		return
	}
	t.m.dropped.Add(bg, int64(n), metric.WithAttributes(attribute.String("kind", kind), attribute.String("reason", reason)))
}

// Woke records one lease's wake latency: from its hint becoming
// claimable to the claim answering with it.
func (t *T) Woke(d time.Duration) {
	if t == nil || t.m == nil {
		return
	}
	t.m.wake.Record(bg, d.Seconds())
}

// Holding counts a claim request that starts (+1) or ends (-1).
func (t *T) Holding(n int) {
	if t == nil || t.m == nil {
		return
	}
	t.m.waiting.Add(bg, int64(n))
}
