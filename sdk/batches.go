package sdk

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Batch actions.
const (
	BatchCancel = "cancel"
	BatchRerun  = "rerun"
)

// BatchFilter says which runs a batch acts on: every field set must match,
// at least one must be set.
type BatchFilter struct {
	Status        []cairn.RunStatus `json:"status,omitempty"`
	Workflow      string            `json:"workflow,omitempty"`
	StartedAfter  *time.Time        `json:"started_after,omitempty"`
	StartedBefore *time.Time        `json:"started_before,omitempty"`
}

// Batch is a bulk cancel or rerun and its progress (see the createBatch
// operation).
type Batch struct {
	ID        string      `json:"id"`
	Action    string      `json:"action"`
	Filter    BatchFilter `json:"filter"`
	Reason    string      `json:"reason,omitempty"`
	State     string      `json:"state"` // running or done
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	EndedAt   *time.Time  `json:"ended_at,omitempty"`
	Scanned   int         `json:"scanned"`
	Matched   int         `json:"matched"`
	Applied   int         `json:"applied"`
	Skipped   int         `json:"skipped"`
	Failed    int         `json:"failed"`
	Errors    []string    `json:"errors"`
	Cursor    string      `json:"cursor,omitempty"`
	Pages     int         `json:"pages"`
}

// Done reports whether every run was looked at.
func (b *Batch) Done() bool { return b.State == "done" }

// StartBatch starts a batch: action (BatchCancel or BatchRerun) on every
// run matching filter. reason is recorded with each cancel. The server
// does the first page before it answers; the reaper does the rest.
func (c *Client) StartBatch(ctx context.Context, action string, filter BatchFilter, reason string) (*Batch, error) {
	if action != BatchCancel && action != BatchRerun {
		return nil, errors.New("cairn: batch action must be cancel or rerun")
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
