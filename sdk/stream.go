package sdk

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/openapi/client"
)

// Progress streams: a step body publishes progress with Progress, and a
// client follows a run's status, journal and progress with Client.Stream.

type (
	// ProgressEvent is a step body's progress as a run's stream carries it.
	ProgressEvent = cairn.ProgressEvent
	// JournalEvent is a journal entry as a run's stream carries it.
	JournalEvent = cairn.JournalEvent
)

// ErrNotInStep is returned by Progress called with a context that is not
// a step body's.
var ErrNotInStep = errors.New("cairn: not a step body's context")

// Progress publishes v (any value that encodes to JSON, at most 16 KiB)
// to the watchers of the step's run: ctx is the step body's context, or
// one derived from it. Nothing is stored, and the value is sent as is
// (not through the client's codec). A lease may send 50 messages a
// second; beyond, Progress waits as the server asks and sends again, so
// messages keep their order. It returns an error when the value does not
// encode, the attempt is over (a *APIError with Reason fenced or
// run_terminal), or ctx ends first.
func Progress(ctx context.Context, v any) error {
	sc, ok := StepFromContext(ctx)
	if !ok {
		return ErrNotInStep
	}
	s := sc.(*stepCtx)
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cairn: progress value: %w", err)
	}
	for {
		resp, err := s.worker.c.api.ProgressStep(ctx, s.info.Lease, client.ProgressRequest{Value: b})
		if err != nil {
			return s.worker.c.transport(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			return nil
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			return problemOf(resp.StatusCode, body)
		}
		ms, _ := strconv.Atoi(resp.Header.Get("Retry-After-Ms"))
		if !pause(ctx, time.Duration(max(ms, 10))*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// StreamEvent is one event of a run's stream: Kind says which field is
// set.
type StreamEvent struct {
	// Kind is status, journal, progress or end (cairn.Stream*).
	Kind string
	// ID is the event's id (status, journal and end): the stream resumes
	// after it.
	ID string
	// Status is the run's progress (status, end).
	Status *RunProgress
	// Journal is a new journal entry (journal).
	Journal *JournalEvent
	// Progress is a step body's progress (progress).
	Progress *ProgressEvent
}

// Stream follows a run: its status at each change, each new journal
// entry, and its steps' progress, until the run ends (the last event is
// end) or ctx does. A connection the server closes (streams are bounded
// in time) or that breaks is opened again from the last event's id:
// status and journal resume where they were, progress sent meanwhile is
// missed. The sequence yields an error and stops when the run cannot be
// followed (not found, refused).
func (c *Client) Stream(ctx context.Context, run string) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		last, fails := "", 0
		for {
			ended, got, err := c.streamOnce(ctx, run, &last, yield)
			if ended {
				return
			}
			if got {
				fails = 0
			} else {
				fails++
			}
			if err != nil && (!temporary(err) || fails > 5) || ctx.Err() != nil {
				yield(StreamEvent{}, cmp.Or(ctx.Err(), err))
				return
			}
			if fails > 0 && !pause(ctx, time.Duration(fails)*200*time.Millisecond) {
				yield(StreamEvent{}, ctx.Err())
				return
			}
		}
	}
}

// pause waits d, and reports false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// streamOnce reads one connection of run's stream from *last, updating
// it. It reports whether the stream is over (end, or the caller stopped)
// and whether any event came.
func (c *Client) streamOnce(ctx context.Context, run string, last *string, yield func(StreamEvent, error) bool) (over, got bool, err error) {
	var p *client.StreamRunParams
	if *last != "" {
		p = &client.StreamRunParams{LastEventID: last}
	}
	resp, err := c.api.StreamRun(ctx, run, p)
	if err != nil {
		return false, false, c.transport(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return false, false, problemOf(resp.StatusCode, b)
	}
	for ev, err := range readEvents(resp.Body) {
		if err != nil {
			return false, got, err
		}
		got = true
		if ev.ID != "" {
			*last = ev.ID
		}
		if !yield(ev, nil) || ev.Kind == cairn.StreamEnd {
			return true, got, nil
		}
	}
	return false, got, nil
}

// readEvents decodes Server-Sent Events from r.
func readEvents(r io.Reader) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var ev StreamEvent
		var data string
		for sc.Scan() {
			line := sc.Text()
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch {
			case line == "":
				if ev.Kind != "" {
					if err := ev.decode(data); !yield(ev, err) || err != nil {
						return
					}
				}
				ev, data = StreamEvent{}, ""
			case k == "event":
				ev.Kind = v
			case k == "id":
				ev.ID = v
			case k == "data":
				data += v
			}
		}
		if err := sc.Err(); err != nil {
			yield(StreamEvent{}, err)
		}
	}
}

func (ev *StreamEvent) decode(data string) error {
	var target any
	switch ev.Kind {
	case cairn.StreamStatus, cairn.StreamEnd:
		ev.Status = new(RunProgress)
		target = ev.Status
	case cairn.StreamJournal:
		ev.Journal = new(JournalEvent)
		target = ev.Journal
	case cairn.StreamProgress:
		ev.Progress = new(ProgressEvent)
		target = ev.Progress
	default:
		return nil // a kind this client does not know: passed on as is
	}
	if err := json.Unmarshal([]byte(data), target); err != nil {
		return fmt.Errorf("cairn: a %s event does not decode: %w", ev.Kind, err)
	}
	return nil
}
