package engine

import "github.com/cairn-dev/cairn/engine/internal/keys"

// Ids a caller names — runs, workflows, versions, workers — become
// segments of bucket keys. Every entry point checks them with the rules of
// engine/internal/keys before they reach the store: a malformed id is the
// caller's mistake and gets a validation error naming its field, never a
// store error. The API declares the same patterns on its parameters, so
// the OpenAPI document states them; api's tests check that both agree.
const (
	RunIDPattern        = keys.RunIDPattern
	WorkerIDPattern     = keys.WorkerIDPattern
	WorkflowNamePattern = keys.WorkflowNamePattern
	VersionPattern      = keys.VersionPattern
	TextPattern         = keys.TextPattern
	CursorPattern       = keys.CursorPattern
)

// Longest ids, in characters (the key patterns admit ASCII only).
const (
	MaxRunIDLength        = keys.MaxRunIDLength
	MaxWorkerIDLength     = keys.MaxWorkerIDLength
	MaxWorkflowNameLength = keys.MaxWorkflowNameLength
	MaxVersionLength      = keys.MaxVersionLength
	MaxEventNameLength    = keys.MaxEventNameLength
	MaxCursorLength       = keys.MaxCursorLength
)

// CheckRunID returns a validation error naming field when id cannot be a
// run id. For callers whose request types carry no pattern.
func CheckRunID(field, id string) error { return keys.RunID.Check(field, id) }
