package keys

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/cairn-dev/cairn"
)

// Ids a caller names — runs, workflows, versions, workers — become
// segments of bucket keys (see keys.go). Every entry point checks them
// here before they reach the store: an id with a "/", a "." or ".."
// segment, a control character or too many bytes is the caller's mistake
// and gets a validation error naming its field, never a store error. The
// patterns admit no "/" and start with a letter or digit, so no id is
// empty, "." or "..".
//
// The API declares the same patterns on its parameters, so the OpenAPI
// document states them; api's tests check that both agree.
const (
	// RunIDPattern: run ids are ULIDs (the engine's newRunID); letters and digits.
	RunIDPattern = `^[0-9A-Za-z]+$`
	// WorkerIDPattern: what SDKs derive from host and pid.
	WorkerIDPattern = `^[A-Za-z0-9][A-Za-z0-9_.:@-]*$`
	// WorkflowNamePattern and VersionPattern are those cairn.Workflow's
	// Validate enforces at registration.
	WorkflowNamePattern = `^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	VersionPattern      = `^[A-Za-z0-9][A-Za-z0-9_.+-]*$`
	// TextPattern is for names that are stored but never part of a key
	// (event names and ids): any text without control characters.
	TextPattern = `^[^\x00-\x1F\x7F]*$`
	// CursorPattern: a list cursor is base64url (see EncodeCursor).
	CursorPattern = `^[A-Za-z0-9_-]*$`
)

// Longest ids, in characters (the key patterns admit ASCII only).
const (
	MaxRunIDLength        = 64
	MaxWorkerIDLength     = 128
	MaxWorkflowNameLength = 128
	MaxVersionLength      = 64
	MaxEventNameLength    = 128
	MaxCursorLength       = 2048
)

// Rule is what one kind of id must be.
type Rule struct {
	re  *regexp.Regexp
	max int
}

// NewRule is the rule of ids that match pattern and are at most max
// characters.
func NewRule(pattern string, max int) Rule { return Rule{regexp.MustCompile(pattern), max} }

// The rules of the ids callers name.
var (
	RunID        = NewRule(RunIDPattern, MaxRunIDLength)
	StepID       = NewRule(cairn.StepIDPattern, 64)
	WorkerID     = NewRule(WorkerIDPattern, MaxWorkerIDLength)
	WorkflowName = NewRule(WorkflowNamePattern, MaxWorkflowNameLength)
	Version      = NewRule(VersionPattern, MaxVersionLength)
	Text         = NewRule(TextPattern, MaxEventNameLength)
	cursorRE     = regexp.MustCompile(CursorPattern)
)

// Valid reports whether v is a well-formed id of this kind. Go's regexp
// reads invalid UTF-8 as U+FFFD, so valid UTF-8 is checked on its own.
// Lengths count characters, as the OpenAPI maxLength does; the key
// patterns admit ASCII only, where that is bytes.
func (r Rule) Valid(v string) bool {
	return v != "" && len(v) <= 4*r.max && utf8.RuneCountInString(v) <= r.max &&
		utf8.ValidString(v) && r.re.MatchString(v)
}

// Check returns a validation error naming field when v is not a
// well-formed id of this kind.
func (r Rule) Check(field, v string) error {
	switch {
	case v == "":
		return cairn.ValidationError{{Field: field, Message: "required"}}
	case !r.Valid(v):
		return cairn.ValidationError{{Field: field, Message: fmt.Sprintf("must match %s and be at most %d characters", r.re, r.max)}}
	}
	return nil
}

// NewWorkerID returns an id for a worker that registered without one:
// unique, like the host and pid the SDKs use, and sortable by time.
func NewWorkerID(now time.Time) string {
	return "w-" + ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}

// A list cursor is the store's page token in base64url: store tokens may
// hold "/" (the file and mem drivers' are keys) or "+" and "=" (S3's), so
// the raw token would make the cursor's alphabet the driver's. Encoded,
// any cursor outside base64url is refused before it reaches the store.
func EncodeCursor(token string) string {
	if token == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(token))
}

// DecodeCursor returns the store token of a cursor EncodeCursor made.
// What is not base64url, or decodes to something no store returns as a
// token (control characters, invalid UTF-8), is refused.
func DecodeCursor(field, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	// The decoder skips CR and LF: the alphabet is checked first.
	if len(cursor) > MaxCursorLength || !cursorRE.MatchString(cursor) {
		return "", cairn.ValidationError{{Field: field, Message: "not a cursor this listing returned"}}
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) || !Text.re.Match(b) {
		return "", cairn.ValidationError{{Field: field, Message: "not a cursor this listing returned"}}
	}
	return string(b), nil
}

// WorkflowID names a workflow definition: a name at a version.
type WorkflowID struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (w WorkflowID) String() string { return w.Name + "@" + w.Version }
