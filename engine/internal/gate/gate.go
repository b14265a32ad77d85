// Package gate is the flow control of event-started runs: debounce and
// batch windows (docs/DECISIONS.md section 52). A workflow's matching
// events are gathered per key into numbered windows under
// gates/<sha256(workflow, kind, key)>/:
//
//	state                 the open window's number n (absent: 1); moved
//	                      to n+1 by a compare-and-swap when n closes (its
//	                      seal): the one object written once per window
//	<n>/open              window n's settings and opening time, created
//	                      (create-only) before its first event, with its
//	                      timer timers/<due>/g-<sha>-<n>
//	<n>/e/<xx>/<ms>-<id>  one create-only object per event, xx two hex
//	                      digits of the event id's hash (no object, and no
//	                      key range, takes every event of a hot key)
//	<n>/fired             the window's outcome (create-only: the one
//	                      firing that counts): the events it took, the
//	                      ids of those it listed, when it fired
//	ids/<xx>/<idhash>     an event id's marker: the window it was last
//	                      written into (ids.go)
//
// An event reads state, writes its object into the open window, and is in
// it when no seal came before its write: when its read and write took less
// than Settle (a firer lists Settle after sealing), or when state still
// names the window after the write. Otherwise the window's outcome says
// whether it took the event; one it did not take goes to the next window.
//
// A fired window's objects and its events' markers are kept
// Host.Retention after it fired, then deleted through its timer
// (sweep.go); state stays, so a key's window numbers never repeat.
package gate

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/render"
)

// The kinds of window.
const (
	Debounce = "debounce"
	Batch    = "batch"
)

// TimerPrefix starts the timer names of windows: g-<sha>-<n>-<tag>, the
// tag the arming instance's (hex), or x and it for a fired window's sweep.
const TimerPrefix = "g-"

// DefaultSettle is Host.Settle's default: a publish's read and write take
// a few tens of milliseconds.
const DefaultSettle = 200 * time.Millisecond

// ConditionCost caps the CEL cost of a key on one event.
const ConditionCost = 100_000

// Spec is a workflow's compiled debounce or batch.
type Spec struct {
	Kind    string
	key     *render.Condition // nil: one key
	Period  time.Duration     // debounce
	Timeout time.Duration
	MaxSize int // batch
}

// Compile compiles w's debounce or batch (nil when it has neither); field
// names w in errors.
func Compile(w *cairn.Workflow, field string) (*Spec, error) {
	var s *Spec
	var src string
	switch {
	case w.Debounce != nil:
		s, src = &Spec{Kind: Debounce, Period: w.Debounce.Period.D(), Timeout: w.Debounce.WindowTimeout()}, w.Debounce.Key
	case w.Batch != nil:
		s, src = &Spec{Kind: Batch, Timeout: w.Batch.Timeout.D(), MaxSize: w.Batch.MaxSize}, w.Batch.Key
	default:
		return nil, nil
	}
	if src != "" {
		var err error
		if s.key, err = render.CompileEventCondition(src, render.Limits{ExprCost: ConditionCost, TemplateCost: ConditionCost}); err != nil {
			return nil, cairn.ValidationError{{Field: field + "." + s.Kind + ".key", Message: err.Error()}}
		}
	}
	return s, nil
}

// KeyOf is ev's key: the key expression's value (a string as it is, any
// other value as JSON), or "" without one.
func (s *Spec) KeyOf(ev render.Event) (string, error) {
	if s.key == nil {
		return "", nil
	}
	out, err := s.key.Value(render.Vars{Event: &ev})
	if err != nil {
		return "", err
	}
	var str string
	if json.Unmarshal(out, &str) == nil {
		return str, nil
	}
	return string(out), nil
}

// Host is what windows need of the engine.
type Host struct {
	Store *blob.Bucket
	Keys  keys.Layout
	Now   func() time.Time
	Log   *slog.Logger
	// MaxInput is the largest input of a run (a batch's list of payloads).
	MaxInput int
	// Settle is how long (real time) a firer waits after sealing a window
	// before listing its events; an event whose read and write took less
	// is in the window without another read. Zero: DefaultSettle.
	Settle time.Duration
	// Start starts a run of workflow's newest version with input, for the
	// event ev (its last), once per idempotency key.
	Start func(ctx context.Context, workflow string, input json.RawMessage, ev render.Event, key string) (cairn.TriggeredRun, error)
	// TimerDue, PutTimer, DropTimers, DropOrphans: the timer index
	// (engine/internal/timer).
	TimerDue   func(due, now time.Time) time.Time
	PutTimer   func(ctx context.Context, name string, due time.Time) (string, error)
	DropTimers func(ctx context.Context, timerKeys []string, keep string) error
	// DropOrphans drops the timers of a window that never opened, once
	// older than a start in flight could be.
	DropOrphans func(ctx context.Context, timerKeys []string, now time.Time) error
	// Retention is how long a fired window's objects and the id markers
	// of its events are kept after it fired: a publish retried with an
	// id within it is answered with its window (sweep.go). Zero or
	// negative: kept. New raises it to twice MaxRequest, so no publish
	// still in flight finds its window swept.
	Retention, MaxRequest time.Duration
}

// Gates gathers events into windows and fires them.
type Gates struct {
	h     Host
	tag   string // this instance's timer names end with it
	mu    sync.Mutex
	local map[string]*seen // what this instance knows of open windows, by window prefix
}

// seen is what an instance knows of one open window.
type seen struct {
	opened time.Time // zero: not known yet
	events int       // events this instance wrote into it
	full   bool      // a batch window found full (fired by the next event after MinWindow)
	firing bool      // a publish of this instance fires it
}

// New returns the gates of h.
func New(h Host) *Gates {
	h.Settle = cmp.Or(h.Settle, DefaultSettle)
	if h.Retention > 0 {
		h.Retention = max(h.Retention, 2*h.MaxRequest)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return &Gates{h: h, tag: hex.EncodeToString(b[:]), local: map[string]*seen{}}
}

// timerName is window w's timer name on this instance: instances arm
// their own (one timer object is not written by every instance at once).
func (g *Gates) timerName(w window) string { return TimerPrefix + w.id() + "-" + g.tag }

// window is one key's window n.
type window struct {
	prefix string // gates/<sha>/
	n      int64
	open   opening
}

// opening is a window's open object: what its firing needs.
type opening struct {
	Workflow string        `json:"workflow"`
	Kind     string        `json:"kind"`
	Key      string        `json:"key"`
	Period   time.Duration `json:"period,omitempty"`
	Timeout  time.Duration `json:"timeout"`
	MaxSize  int           `json:"max_size,omitempty"`
	Opened   time.Time     `json:"opened"`
}

func (w window) dir() string          { return w.prefix + fmt.Sprintf("%010d/", w.n) }
func (w window) openKey() string      { return w.dir() + "open" }
func (w window) firedKey() string     { return w.dir() + "fired" }
func (w window) eventsPrefix() string { return w.dir() + "e/" }
func (w window) idemKey(i int) string {
	return "gate:" + w.sha() + ":" + strconv.FormatInt(w.n, 10) + ":" + strconv.Itoa(i)
}
func (w window) sha() string {
	return strings.TrimSuffix(w.prefix[strings.LastIndex(w.prefix[:len(w.prefix)-1], "/")+1:], "/")
}
func (w window) id() string         { return w.sha() + "-" + strconv.FormatInt(w.n, 10) }
func (w window) closes() time.Time  { return w.open.Opened.Add(w.open.Timeout) }
func stateKey(prefix string) string { return prefix + "state" }
func idHash(id string) string       { h := sha256.Sum256([]byte(id)); return hex.EncodeToString(h[:8]) }
func (w window) eventKey(at time.Time, id string) string {
	h := idHash(id)
	return fmt.Sprintf("%s%s/%013d-%s", w.eventsPrefix(), h[:2], at.UnixMilli(), h)
}

// TimerID returns the window a timer name wakes, <sha>-<n>-<tag> (ok
// false: not a window's).
func TimerID(name string) (string, bool) {
	if !strings.HasPrefix(name, TimerPrefix) {
		return "", false
	}
	return strings.TrimPrefix(name, TimerPrefix), true
}

// parseTimerID splits a window timer id into the key's prefix, the
// window number and the timer's tag.
func (g *Gates) parseTimerID(id string) (string, int64, string, error) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return "", 0, "", fmt.Errorf("window timer %q: not <sha>-<n>-<tag>", id)
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", 0, "", fmt.Errorf("window timer %q: %v", id, err)
	}
	return g.h.Keys.Prefix + "gates/" + parts[0] + "/", n, parts[2], nil
}

// errClosing: windows kept closing under an event (it is retried by its
// publisher, with its id).
var errClosing = errors.New("the key's windows kept closing while the event was written: publish it again with its id")
