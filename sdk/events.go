package sdk

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

type (
	// PublishResult says which runs a published event started: one per
	// workflow whose trigger it matched (Existed when a publish of the
	// same id had started it).
	PublishResult = cairn.PublishResult
	// TriggeredRun is the run an event started for one workflow.
	TriggeredRun = cairn.TriggeredRun
	// EventRef names the published event that started a run (Run.Event).
	EventRef = cairn.EventRef
)

// PublishOptions are a publish's optional settings.
type PublishOptions struct {
	// ID makes publishing safe to retry: a publish of an id starts
	// nothing twice (per workflow). Default: a new id, in the answer.
	ID string
}

// Publish publishes event name: every workflow whose newest registered
// version has a trigger of that name (WorkflowDef.On) whose condition
// holds gets a run, with payload (any value that encodes to JSON, or a
// json.RawMessage) as its input. The payload is sent as it is, not
// encrypted by the client's codec: triggers' conditions read it.
func (c *Client) Publish(ctx context.Context, name string, payload any, opts PublishOptions) (*PublishResult, error) {
	req := client.PublishRequest{Name: name, Id: ptr(opts.ID)}
	var err error
	if req.Payload, err = optionalJSON(payload, "event payload"); err != nil {
		return nil, err
	}
	return decodeView[PublishResult](c)(c.api.PublishEvent(ctx, req))
}

// On declares a trigger: an event named event published (Client.Publish,
// `cairn events publish`) starts a run of the workflow's newest
// registered version when cond, a CEL condition over event (name, id,
// payload), holds; "" for every event of the name. The run's input is the
// event's payload.
func (d *WorkflowDef) On(event, cond string) *WorkflowDef {
	d.wf.On = append(d.wf.On, cairn.Trigger{Event: event, If: cond})
	return d
}

// Debounce makes the runs the workflow's triggers start wait for a quiet
// spell: per value of key (a CEL expression over event; "" for one key),
// a run starts once period has passed without a new matching event, with
// the last event's payload as input, and at the latest timeout after the
// first (0: 7 days).
func (d *WorkflowDef) Debounce(key string, period, timeout time.Duration) *WorkflowDef {
	d.wf.Debounce = &cairn.Debounce{Key: key, Period: cairn.Duration(period), Timeout: cairn.Duration(timeout)}
	return d
}

// Batch gathers the events the workflow's triggers match, per value of
// key (a CEL expression over event; "" for one key), into runs whose
// input is the list of their payloads in publish order: a run starts at
// maxSize events (a second after the first at the soonest) or timeout
// after the first.
func (d *WorkflowDef) Batch(key string, maxSize int, timeout time.Duration) *WorkflowDef {
	d.wf.Batch = &cairn.EventBatch{Key: key, MaxSize: maxSize, Timeout: cairn.Duration(timeout)}
	return d
}

// CancelOn cancels a running run of the workflow when an event of this
// name is published (Client.Publish) and cond, a CEL condition over
// event (name, id, payload) and the run's input, state and run, holds
// ("" for any): "event.payload.order == input.order". Within timeout of
// the run's start only, when timeout > 0.
func (d *WorkflowDef) CancelOn(event, cond string, timeout time.Duration) *WorkflowDef {
	d.wf.CancelOn = append(d.wf.CancelOn, cairn.CancelOn{Event: event, If: cond, Timeout: cairn.Duration(timeout)})
	return d
}

// WaitAny adds a step that waits for the first of several events sent to
// the run; its output is {"event": <name>, "id": <id>, "payload": …}.
// Options as for Wait, and If.
func (d *WorkflowDef) WaitAny(id string, events []string, opts ...StepOption) *WorkflowDef {
	return d.add(cairn.Step{ID: id, Kind: cairn.KindWait, Events: events}, opts)
}

// If makes a wait step take only the events for which cond, a CEL
// condition over event (name, id, payload), input, state, steps and run,
// holds; the others are left for other waits, or kept.
func If(cond string) StepOption {
	return takes("if", func(s *cairn.Step) { s.If = cond })
}
