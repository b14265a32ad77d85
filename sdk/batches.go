package sdk

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Batch actions, the filter and the batch's progress: the API's views
// (the root package's).
const (
	BatchCancel = cairn.BatchCancel
	BatchRerun  = cairn.BatchRerun
	BatchPause  = cairn.BatchPause
	BatchResume = cairn.BatchResume
)

type (
	// BatchFilter says which runs a batch acts on: every field set must
	// match, at least one must be set.
	BatchFilter = cairn.BatchFilter
	// Batch is a bulk cancel or rerun and its progress (see the
	// createBatch operation).
	Batch = cairn.Batch
)

// StartBatch starts a batch: action (BatchCancel, BatchRerun, BatchPause
// or BatchResume) on every run matching filter. reason is recorded with
// each cancel. The server does the first page before it answers; the
// reaper does the rest.
func (c *Client) StartBatch(ctx context.Context, action string, filter BatchFilter, reason string) (*Batch, error) {
	if !slices.Contains([]string{BatchCancel, BatchRerun, BatchPause, BatchResume}, action) {
		return nil, errors.New("cairn: batch action must be cancel, rerun, pause or resume")
	}
	f := client.BatchFilter{Workflow: ptr(filter.Workflow), StartedAfter: filter.StartedAfter, StartedBefore: filter.StartedBefore}
	if len(filter.Status) > 0 {
		st := make([]client.BatchFilterStatus, len(filter.Status))
		for i, s := range filter.Status {
			st[i] = client.BatchFilterStatus(s)
		}
		f.Status = &st
	}
	req := client.BatchRequest{Action: client.BatchRequestAction(action), Filter: f, Reason: ptr(reason)}
	return decodeView[Batch](c)(c.api.CreateBatch(ctx, req))
}

// GetBatch returns a batch.
func (c *Client) GetBatch(ctx context.Context, id string) (*Batch, error) {
	return decodeView[Batch](c)(c.api.GetBatch(ctx, id))
}

// WaitBatch polls a batch every interval (default 1 s) until it is done
// or ctx ends.
func (c *Client) WaitBatch(ctx context.Context, id string, interval time.Duration) (*Batch, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		b, err := c.GetBatch(ctx, id)
		if err != nil || b.Done() {
			return b, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return b, ctx.Err()
		case <-t.C:
		}
	}
}
