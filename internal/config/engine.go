package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/testclock"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/notify"
)

// Engine tunes the engine. Unset durations take the engine's defaults
// (engine.Default*), resolved here so that they can be checked against
// each other and the platform's limits.
type Engine struct {
	Prices cairn.PriceBook

	MaxRequestTime   time.Duration
	LeaseTTL         time.Duration
	Heartbeat        time.Duration
	FallbackInterval time.Duration // 0: the engine's default
	// ClaimHold is the longest a claim is held open (CAIRN_CLAIM_HOLD):
	// never more than 4/5 of MaxRequestTime; 0 answers claims at once.
	// ClaimPause is what an empty claim tells the worker to wait before
	// the next (CAIRN_CLAIM_PAUSE). Both default short on Lambda
	// (LambdaClaimHold, LambdaClaimPause), where a held claim is an
	// execution environment; elsewhere the hold is 4/5 of MaxRequestTime
	// and there is no pause.
	ClaimHold  time.Duration
	ClaimPause time.Duration
	// Retention is how long ended runs are kept; negative: forever
	// (CAIRN_RETENTION=forever).
	Retention time.Duration
	// KeyLayout is engine.KeyLayoutFlat or engine.KeyLayoutSharded
	// (CAIRN_KEY_LAYOUT; "" is flat).
	KeyLayout string
	// PayloadInlineMax and MaxPayloadBytes: see engine.Config (0: the
	// engine's defaults; PayloadInlineMax -1 keeps every value inline).
	PayloadInlineMax int
	MaxPayloadBytes  int
	// TestClock, when set, is the engine's clock, moved by POST /dev/clock
	// (cairn dev --test-clock; never from the environment).
	TestClock *testclock.Clock
	// ReplaceDefinitions: a changed definition replaces the stored one
	// (set by cairn dev, not by a variable; engine.Config).
	ReplaceDefinitions bool
	// ShedAbove is engine.Config.ShedAbove (CAIRN_SHED_ABOVE; 0: the
	// engine's default, negative: off).
	ShedAbove float64
}

// The claim policy on Lambda, unless CAIRN_CLAIM_HOLD and
// CAIRN_CLAIM_PAUSE say otherwise: a waiting worker holds an execution
// environment for LambdaClaimHold out of every LambdaClaimHold + a pause
// of 3/4 × LambdaClaimPause on average (the SDKs' jitter), about a tenth
// of the time, instead of all of it (docs/SCALE.md, section 4).
const (
	LambdaClaimHold  = 2 * time.Second
	LambdaClaimPause = 20 * time.Second
	// MaxClaimPause bounds CAIRN_CLAIM_PAUSE: a worker that waits longer
	// between claims would call less often than an instance notes a
	// worker's calls (engine.WorkerSeenEvery), and its listed last_seen_at
	// would lag.
	MaxClaimPause = time.Minute
)

func (e *Engine) parse(r *reader, p Platform) {
	if raw := r.str(EnvPrices); raw != "" {
		e.Prices = r.prices(raw)
	}
	e.MaxRequestTime = r.duration(EnvMaxRequestTime, engine.DefaultMaxRequestTime, 2*time.Second, time.Hour)
	e.LeaseTTL = r.duration(EnvLeaseTTL, engine.DefaultLeaseTTL, time.Second, 24*time.Hour)
	e.Heartbeat = r.duration(EnvHeartbeat, 0, 100*time.Millisecond, 24*time.Hour)
	if e.Heartbeat == 0 && e.LeaseTTL > 0 {
		e.Heartbeat = e.LeaseTTL / engine.DefaultHeartbeatsPerTTL
	}
	if e.Heartbeat > 0 && e.LeaseTTL > 0 && e.Heartbeat >= e.LeaseTTL {
		r.problem(EnvHeartbeat, fmt.Sprintf("%v must be shorter than the lease TTL %v (CAIRN_LEASE_TTL), or a worker's lease expires between two heartbeats", e.Heartbeat, e.LeaseTTL))
	}
	e.FallbackInterval = r.duration(EnvFallbackInterval, 0, 100*time.Millisecond, time.Hour)
	maxHold := e.MaxRequestTime * 4 / 5
	holdDef, pauseDef := maxHold, time.Duration(0)
	if p.OnLambda {
		holdDef, pauseDef = min(LambdaClaimHold, maxHold), LambdaClaimPause
	}
	e.ClaimHold = r.duration(EnvClaimHold, holdDef, 0, time.Hour)
	if e.MaxRequestTime > 0 && e.ClaimHold > maxHold {
		r.problem(EnvClaimHold, fmt.Sprintf("%v is longer than 4/5 of CAIRN_MAX_REQUEST_TIME (%v): the platform would cut the claim off", e.ClaimHold, maxHold))
	}
	e.ClaimPause = r.duration(EnvClaimPause, pauseDef, 0, MaxClaimPause)
	if r.str(EnvRetention) == "forever" {
		e.Retention = -1
	} else {
		e.Retention = r.duration(EnvRetention, engine.DefaultRetention, time.Hour, 100*365*24*time.Hour)
	}
	switch e.KeyLayout = r.str(EnvKeyLayout); e.KeyLayout {
	case "", engine.KeyLayoutFlat, engine.KeyLayoutSharded:
	default:
		r.problem(EnvKeyLayout, fmt.Sprintf("%q: want %s or %s", e.KeyLayout, engine.KeyLayoutFlat, engine.KeyLayoutSharded))
	}
	if r.str(EnvPayloadInlineMax) == "off" {
		e.PayloadInlineMax = -1
	} else {
		e.PayloadInlineMax = r.bytes(EnvPayloadInlineMax, 0, 1<<10, 4<<20)
	}
	e.MaxPayloadBytes = r.bytes(EnvMaxPayloadBytes, 0, 1<<10, 1<<30)
	switch v := r.str(EnvShedAbove); v {
	case "":
	case "off":
		e.ShedAbove = -1
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0.01 || f > 0.99 {
			r.problem(EnvShedAbove, fmt.Sprintf("%q: want a share from 0.01 to 0.99 of the writes the store may refuse before new runs are shed, or off", v))
		}
		e.ShedAbove = f
	}
}

// bytes reads a size in bytes within [min, max]; def when unset.
func (r *reader) bytes(k string, def, min, max int) int {
	v := r.str(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		r.problem(k, fmt.Sprintf("%q: want a number of bytes from %d to %d", v, min, max))
		return 0
	}
	return n
}

// EngineConfig is the engine configuration, with bus and logger.
func (c *Config) EngineConfig(bus notify.Bus, log *slog.Logger) engine.Config {
	return engine.Config{
		LeaseTTL:           c.LeaseTTL,
		HeartbeatInterval:  c.Heartbeat,
		MaxRequestTime:     c.MaxRequestTime,
		FallbackInterval:   c.FallbackInterval,
		ClaimHold:          claimHold(c.ClaimHold),
		ClaimPause:         c.ClaimPause,
		Retention:          c.Retention,
		KeyLayout:          c.KeyLayout,
		PayloadInlineMax:   c.PayloadInlineMax,
		MaxOutputBytes:     c.MaxPayloadBytes,
		ShedAbove:          c.ShedAbove,
		ReplaceDefinitions: c.ReplaceDefinitions,
		Prices:             c.Prices,
		Bus:                bus,
		Logger:             log,
		// GCS takes about one write a second to one object: the committer
		// spaces its writes of a run record instead of being refused.
		ObjectWritesPerSecond: objectWritesPerSecond(c.Blob),
		Now:                   c.now(),
	}
}

// now is the engine's clock: the test clock, or nil (the real time).
func (c *Config) now() func() time.Time {
	if c.TestClock == nil {
		return nil
	}
	return c.TestClock.Now
}

// objectWritesPerSecond is the per-object write limit of the bucket the
// URL names: 1 for GCS (gs://), none for the rest.
func objectWritesPerSecond(blobURL string) float64 {
	if strings.HasPrefix(blobURL, "gs://") {
		return 1
	}
	return 0
}

// claimHold is the engine's form: 0 there is the default, negative none.
func claimHold(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// prices decodes a price book strictly: unknown fields and negative prices
// are errors.
func (r *reader) prices(raw string) cairn.PriceBook {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var book cairn.PriceBook
	if err := dec.Decode(&book); err != nil {
		r.problem(EnvPrices, fmt.Sprintf("not a price book: %v; want JSON such as {\"claude-sonnet\":{\"input_per_million\":3,\"output_per_million\":15}}", err))
		return nil
	}
	if dec.More() {
		r.problem(EnvPrices, "trailing data after the JSON object")
		return nil
	}
	for _, m := range slices.Sorted(maps.Keys(book)) {
		p := book[m]
		if m == "" {
			r.problem(EnvPrices, "a model name is empty")
		}
		if p.InputPerMillion < 0 || p.OutputPerMillion < 0 {
			r.problem(EnvPrices, fmt.Sprintf("model %q: prices must not be negative", m))
		}
	}
	return book
}
