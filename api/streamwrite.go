package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/notify"
)

// stream writes one run's Server-Sent Events.
type stream struct {
	w  io.Writer
	at cursor // what the client has
}

// progressSource is a run's progress on this instance (engine.WatchProgress).
type progressSource interface {
	C() <-chan notify.Progress
	Missed() int
}

// pump sends the run's snapshots and progress until the run ends, the
// stream's lifetime passes or the client goes.
func (s *stream) pump(ctx context.Context, snaps <-chan snapshot, sub progressSource) {
	keep := time.NewTicker(streamKeepAlive)
	defer keep.Stop()
	for {
		var err error
		select {
		case p := <-sub.C():
			err = s.event(cairn.StreamProgress, "", cairn.ProgressEvent{Step: p.Step, Attempt: p.Attempt, Value: p.Value, At: p.At, Missed: sub.Missed()})
		case sn, ok := <-snaps:
			if !ok {
				return
			}
			var end bool
			end, err = s.snapshot(sn)
			if end {
				return
			}
		case <-keep.C:
			err = s.write([]byte(": keep-alive\n\n"))
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// snapshot sends what the client lacks of sn: the journal entries after
// its seq, then the status if it changed; and end once the run ended.
func (s *stream) snapshot(sn snapshot) (end bool, err error) {
	for i := s.at.seq; i < len(sn.journal); i++ {
		s.at.seq = i + 1
		if err := s.event(cairn.StreamJournal, s.at.String(), cairn.JournalEvent{Seq: i + 1, Entry: sn.journal[i]}); err != nil {
			return false, err
		}
	}
	if sn.status.Rev > s.at.rev {
		s.at.rev = sn.status.Rev
		if err := s.event(cairn.StreamStatus, s.at.String(), sn.status); err != nil {
			return false, err
		}
	}
	if !sn.status.Status.Terminal() {
		return false, nil
	}
	return true, s.event(cairn.StreamEnd, s.at.String(), sn.status)
}

// event writes one event, and flushes it.
func (s *stream) event(name, id string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	msg := fmt.Appendf(nil, "event: %s\n", name)
	if id != "" {
		msg = fmt.Appendf(msg, "id: %s\n", id)
	}
	msg = fmt.Appendf(msg, "data: %s\n\n", b)
	return s.write(msg)
}

func (s *stream) write(b []byte) error {
	rw, ok := s.w.(http.ResponseWriter)
	if !ok {
		_, err := s.w.Write(b)
		return err
	}
	rc := http.NewResponseController(rw)
	_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second)) // not every writer has deadlines
	if _, err := rw.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}
