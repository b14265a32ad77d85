package cairn

import (
	"encoding/json"
	"time"
)

// The vocabulary of progress streams: what a step body publishes, and the
// events a run's stream (GET /runs/{run}/stream, Server-Sent Events)
// carries. Progress is never stored: a watcher sees the messages sent
// while it is connected. Status and journal events are durable and
// resume from the stream's Last-Event-ID.

// ProgressRequest is a step body's progress message.
type ProgressRequest struct {
	Value json.RawMessage `json:"value" doc:"Any JSON value, at most 16 KiB: the step's progress for the run's watchers. Not stored."`
}

// The event names of a run's stream.
const (
	StreamStatus   = "status"   // a RunProgress: the run's status changed
	StreamJournal  = "journal"  // a JournalEvent: an entry was added
	StreamProgress = "progress" // a ProgressEvent: a step body's progress
	StreamEnd      = "end"      // a RunProgress: the run ended; the stream closes
)

// ProgressEvent is a step body's progress as a run's stream sends it.
type ProgressEvent struct {
	Step    string          `json:"step"`
	Attempt int             `json:"attempt"`
	Value   json.RawMessage `json:"value"`
	At      time.Time       `json:"at" doc:"When the server accepted the message."`
	Missed  int             `json:"missed,omitempty" doc:"Progress messages this stream dropped before this one because its reader fell behind."`
}

// JournalEvent is a journal entry as a run's stream sends it.
type JournalEvent struct {
	Seq   int          `json:"seq" doc:"The entry's place in the run's journal, from 1."`
	Entry JournalEntry `json:"entry"`
}
