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
	w   io.Writer
	at  cursor // what the client has
	buf []byte // events not yet written
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
			s.progress(p, sub)
			err = s.drain(sub) // more that came meanwhile, in one write
		case sn, ok := <-snaps:
			if !ok {
				return
			}
			// The progress received before the change goes first (a
			// step's last messages before its end).
			if err = s.drain(sub); err != nil {
				return
			}
			var end bool
			end, err = s.snapshot(sn)
			if end || err != nil {
				return
			}
		case <-keep.C:
			s.buf = append(s.buf, ": keep-alive\n\n"...)
			err = s.flush()
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *stream) progress(p notify.Progress, sub progressSource) {
	s.event(cairn.StreamProgress, "", cairn.ProgressEvent{Step: p.Step, Attempt: p.Attempt, Value: p.Value, At: p.At, Missed: sub.Missed()})
}

// drain sends the progress messages waiting (up to a bound per write).
func (s *stream) drain(sub progressSource) error {
	for len(s.buf) < 256<<10 {
		select {
		case p := <-sub.C():
			s.progress(p, sub)
			continue
		default:
		}
		break
	}
	return s.flush()
}

// snapshot sends what the client lacks of sn: the journal entries after
// its seq, then the status if it changed; and end once the run ended.
func (s *stream) snapshot(sn snapshot) (end bool, err error) {
	for i := s.at.seq; i < len(sn.journal); i++ {
		s.at.seq = i + 1
		s.event(cairn.StreamJournal, s.at.String(), cairn.JournalEvent{Seq: i + 1, Entry: sn.journal[i]})
	}
	if sn.status.Rev > s.at.rev {
		s.at.rev = sn.status.Rev
		s.event(cairn.StreamStatus, s.at.String(), sn.status)
	}
	end = sn.status.Status.Terminal()
	if end {
		s.event(cairn.StreamEnd, s.at.String(), sn.status)
	}
	return end, s.flush()
}

// event adds one event to the buffer.
func (s *stream) event(name, id string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "the event did not encode"})
	}
	s.buf = fmt.Appendf(s.buf, "event: %s\n", name)
	if id != "" {
		s.buf = fmt.Appendf(s.buf, "id: %s\n", id)
	}
	s.buf = fmt.Appendf(s.buf, "data: %s\n\n", b)
}

// open sends the answer's headers at once, before any event: a client
// then knows the stream is open, and its progress subscribed.
func (s *stream) open() error { return s.write(nil) }

// flush writes the buffered events.
func (s *stream) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	b := s.buf
	s.buf = s.buf[:0]
	return s.write(b)
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
