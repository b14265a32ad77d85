package cairn

// Flow control of event-started runs: debounce and batch
// (docs/DECISIONS.md section 52). Both gather a workflow's matching
// published events into windows, one per key, and start a run when a
// window closes, instead of one run per event.

import (
	"strconv"
	"time"
)

// Bounds of debounce and batch.
const (
	// MinWindow is the shortest period or timeout: a key's window state
	// is written about once per window, and a store takes one write per
	// second to one object (GCS).
	MinWindow = time.Second
	// MaxWindow is the longest timeout.
	MaxWindow = 7 * 24 * time.Hour
	// MaxBatchSize is the largest max_size of a batch.
	MaxBatchSize = 1000
)

// Debounce starts one run per quiet spell of a key: a run starts once
// period has passed without a new matching event of the key, with the
// last event's payload as input, and at the latest timeout after the
// window's first event.
type Debounce struct {
	Key     string   `json:"key,omitempty" maxLength:"2000" doc:"A CEL expression over event (name, id, payload), bare or as ${expr}: events of one value share a window. Empty: one window for the workflow."`
	Period  Duration `json:"period" doc:"The quiet time after a key's last event before its run starts (at least 1s)."`
	Timeout Duration `json:"timeout,omitempty" doc:"The longest a window stays open after its first event, quiet or not (default and at most 7 days; not less than period)."`
}

// EventBatch gathers a key's matching events into one run whose input is
// the list of their payloads, in publish order.
type EventBatch struct {
	Key     string   `json:"key,omitempty" maxLength:"2000" doc:"A CEL expression over event (name, id, payload), bare or as ${expr}: events of one value are batched together. Empty: one batch at a time for the workflow."`
	MaxSize int      `json:"max_size" minimum:"1" maximum:"1000" doc:"A window closes when it holds this many events (but not within a second of its first); the events beyond it start further runs of max_size each."`
	Timeout Duration `json:"timeout" doc:"A window closes this long after its first event, full or not (at least 1s)."`
}

// checkEventFlow checks debounce and batch: at most one of them, with a
// trigger to apply to, and bounds in range.
func (w *Workflow) checkEventFlow(add func(field, format string, args ...any)) {
	if w.Debounce != nil && w.Batch != nil {
		add(".batch", "set debounce or batch, not both")
	}
	if (w.Debounce != nil || w.Batch != nil) && len(w.On) == 0 {
		add(".on", "debounce and batch apply to the runs triggers start: declare a trigger (on)")
	}
	if d := w.Debounce; d != nil {
		checkCondition(d.Key, ".debounce.key", add)
		checkWindow(d.Period.D(), ".debounce.period", add)
		if d.Timeout != 0 {
			checkWindow(d.Timeout.D(), ".debounce.timeout", add)
			if d.Timeout < d.Period {
				add(".debounce.timeout", "must not be less than period")
			}
		}
	}
	if b := w.Batch; b != nil {
		checkCondition(b.Key, ".batch.key", add)
		checkWindow(b.Timeout.D(), ".batch.timeout", add)
		if b.MaxSize < 1 || b.MaxSize > MaxBatchSize {
			add(".batch.max_size", "must be between 1 and %d", MaxBatchSize)
		}
	}
}

func checkWindow(d time.Duration, field string, add func(field, format string, args ...any)) {
	if d < MinWindow || d > MaxWindow {
		add(field, "must be between %s and %s", MinWindow, MaxWindow)
	}
}

// WindowTimeout is the debounce's timeout: its own, or MaxWindow.
func (d *Debounce) WindowTimeout() time.Duration {
	if d.Timeout == 0 {
		return MaxWindow
	}
	return d.Timeout.D()
}

// String is the debounce for people: "key event.payload.user, period 5s,
// timeout 1m0s" (the CLI and the dashboard show it).
func (d *Debounce) String() string {
	s := "period " + d.Period.D().String()
	if d.Timeout != 0 {
		s += ", timeout " + d.Timeout.D().String()
	}
	return keyPart(d.Key) + s
}

// String is the batch for people: "key event.payload.user, max 100,
// timeout 10s".
func (b *EventBatch) String() string {
	return keyPart(b.Key) + "max " + strconv.Itoa(b.MaxSize) + ", timeout " + b.Timeout.D().String()
}

func keyPart(key string) string {
	if key == "" {
		return ""
	}
	return "key " + key + ", "
}
