package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
)

// Reaping is what a Reaper runs passes of: *engine.Engine.
type Reaping interface {
	Reap(ctx context.Context) (engine.ReapStats, error)
}

// OwnWakes is what a Reaper whose engine implements it (*engine.Engine)
// also drives between passes: the exact due times of the timers the
// engine itself wrote, visited when due instead of at the next pass
// (engine/ownwake.go).
type OwnWakes interface {
	KeepOwnWakes()
	NextOwnWake() (in time.Duration, ok bool, changed <-chan struct{})
	VisitOwnWakes(ctx context.Context) engine.ReapStats
}

// DefaultReapPeriod is ReaperConfig.Period's default: a second, as on a
// laptop. The clouds schedule the reaper function every minute instead.
const DefaultReapPeriod = time.Second

// ReaperConfig configures a Reaper. Zero fields take the defaults in
// brackets.
type ReaperConfig struct {
	// Period between the starts of two passes [1s]. A pass that takes
	// longer delays the next one; ticks are not queued.
	Period time.Duration
	// Name prefixes the log lines ["cairn reaper"].
	Name string
	// Logger [slog.Default()].
	Logger *slog.Logger
	// LogLevel is the level of the line a pass that visited runs logs
	// [Info]. A pass with nothing due logs at Debug (at LogLevel with
	// LogIdle); a failed pass logs at Error and one with failed visits at
	// Warn, whatever LogLevel.
	LogLevel slog.Level
	LogIdle  bool
}

func (c ReaperConfig) withDefaults() ReaperConfig {
	if c.Period <= 0 {
		c.Period = DefaultReapPeriod
	}
	if c.Name == "" {
		c.Name = "cairn reaper"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Pass is what one reaper pass did: the engine's statistics and how long
// it took. It is what the reaper function answers, and the same shape as
// the API's POST /reaper/run.
type Pass struct {
	engine.ReapStats
	DurationMs int64 `json:"duration_ms"`
}

// ReaperStats are a Reaper's totals since it was made.
type ReaperStats struct {
	Passes, Failed int
	engine.ReapStats
}

// Reaper runs reaper passes: one (RunOnce) or one every period until its
// context ends (Run). Passes are idempotent and safe to run concurrently
// with each other and with API instances, so any number of Reapers may
// run on one bucket.
type Reaper struct {
	Config ReaperConfig
	e      Reaping

	mu    sync.Mutex
	stats ReaperStats
}

// NewReaper returns a Reaper of e.
func NewReaper(e Reaping, cfg ReaperConfig) *Reaper {
	return &Reaper{Config: cfg.withDefaults(), e: e}
}

// Run runs a pass at once and then every Config.Period until ctx ends;
// a pass in flight then is cancelled (harmless: the next pass, here or
// elsewhere, redoes what is left).
func (r *Reaper) Run(ctx context.Context) {
	log := r.Config.Logger
	log.Info(r.Config.Name + ": a pass every " + r.Config.Period.String())
	t := time.NewTicker(r.Config.Period)
	defer t.Stop()
	own, _ := r.e.(OwnWakes)
	if own != nil {
		own.KeepOwnWakes() // before the first pass: a timer armed meanwhile is kept
	}
	for {
		r.RunOnce(ctx)
		if !r.waitTick(ctx, t.C, own) {
			st := r.Stats()
			log.Info(r.Config.Name+": stopped", "passes", st.Passes, "failed", st.Failed, "runs_visited", st.RunsVisited,
				"leases_lost", st.LeasesLost, "timers_fired", st.TimersFired, "announced", st.Announced, "errors", st.Errors)
			return
		}
	}
}

// waitTick waits for the next tick, visiting the engine's own wakes as
// they fall due meanwhile; it reports false once ctx ended.
func (r *Reaper) waitTick(ctx context.Context, tick <-chan time.Time, own OwnWakes) bool {
	for {
		var (
			wake    <-chan time.Time
			changed <-chan struct{}
			timer   *time.Timer
		)
		if own != nil {
			in, ok, ch := own.NextOwnWake()
			changed = ch
			if ok {
				timer = time.NewTimer(in)
				wake = timer.C
			}
		}
		select {
		case <-ctx.Done():
			stopTimer(timer)
			return false
		case <-tick:
			stopTimer(timer)
			return true
		case <-changed:
			stopTimer(timer)
		case <-wake:
			st := own.VisitOwnWakes(ctx)
			r.mu.Lock()
			r.stats.ReapStats.Add(st) // visits, not a pass
			r.mu.Unlock()
			if st.Errors > 0 {
				r.Config.Logger.Warn(r.Config.Name+": own wakes visited with errors", "stats", st)
			}
		}
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// RunOnce runs one pass, logs it and adds it to the totals.
func (r *Reaper) RunOnce(ctx context.Context) (Pass, error) {
	start := time.Now()
	st, err := r.e.Reap(ctx)
	p := Pass{ReapStats: st, DurationMs: time.Since(start).Milliseconds()}
	r.add(p, err)
	log, name := r.Config.Logger, r.Config.Name
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopping: not a failure worth a line.
	case err != nil:
		log.Error(name+": pass failed", "err", err, "took_ms", p.DurationMs)
	case st.Errors > 0:
		log.Warn(name+": pass done with errors", "stats", st, "took_ms", p.DurationMs)
	case st.RunsVisited > 0 || r.Config.LogIdle:
		log.Log(ctx, r.Config.LogLevel, name+": pass", "stats", st, "took_ms", p.DurationMs)
	default:
		log.Debug(name+": pass, nothing due", "took_ms", p.DurationMs)
	}
	return p, err
}

func (r *Reaper) add(p Pass, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.stats
	s.Passes++
	if err != nil {
		s.Failed++
	}
	s.ReapStats.Add(p.ReapStats)
}

// Stats returns the totals of the passes run so far.
func (r *Reaper) Stats() ReaperStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}
