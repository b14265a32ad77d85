// Package faults wraps a notification bus with injected faults, for tests
// that prove hints are only hints: with every notification dropped,
// duplicated or reordered, all work still completes (within the engine's
// fallback bound when hints are lost).
//
//	bus := faults.Wrap(mem.New(), faults.Config{Drop: 1}) // lose everything
//
// It is also registered as "faults" with notify.Open, wrapping another URL:
//
//	faults://?url=mem%3A%2F%2Fx&drop=0.5&dup=0.1&reorder=0.2&delay=50ms&fail=0.1&seed=7
//
// The package was called faulty, and its scheme "faulty"; that scheme
// (LegacyScheme) is still accepted and opens the same bus. It is named like
// blob/faults, the store's fault layer; a file that uses both imports this
// one under another name (notifyfaults), as it does notify/mem.
//
// Faults apply on the publishing side, per hint: a dropped hint is lost
// silently (Publish still succeeds, as on a network that loses a message);
// a duplicated one is sent twice; a reordered one is held back and sent
// on its own after a random delay up to MaxDelay, and a batch's remaining
// hints are shuffled. FailPublish makes a whole Publish fail without
// sending anything, which the engine answers by serving its own claims.
package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/internal/busurl"
)

// Scheme is the URL scheme this package registers.
const Scheme = "faults"

// LegacyScheme is the package's former scheme, still registered as an
// alias of Scheme so that existing URLs keep working.
const LegacyScheme = "faulty"

func init() {
	open := func(ctx context.Context, u *url.URL) (notify.Bus, error) { return OpenURL(ctx, u) }
	notify.Register(Scheme, open)
	notify.Register(LegacyScheme, open)
}

// Config says which faults to inject. Probabilities are in [0, 1].
type Config struct {
	// Drop is the probability that a hint is lost.
	Drop float64
	// Duplicate is the probability that a hint is sent twice.
	Duplicate float64
	// Reorder is the probability that a hint is held back and sent later,
	// alone, after a random delay up to MaxDelay; a batch's other hints
	// are then shuffled too.
	Reorder float64
	// MaxDelay bounds a held-back hint's delay [100ms].
	MaxDelay time.Duration
	// FailPublish is the probability that a Publish call fails whole,
	// sending nothing.
	FailPublish float64
	// Seed makes the faults reproducible; 0 picks a random seed.
	Seed uint64
}

// ErrInjected is the error of a Publish failed by FailPublish.
var ErrInjected = errors.New("faults: injected publish failure")

// Stats counts what the bus did to hints.
type Stats struct {
	Published  int64 // hints handed to Publish
	Sent       int64 // hints sent on the inner bus (duplicates included)
	Dropped    int64
	Duplicated int64
	Delayed    int64
	Failed     int64 // Publish calls failed by FailPublish
}

// Bus is a bus with faults. Subscribe is the inner bus's.
type Bus struct {
	inner notify.Bus
	owned bool // Close closes inner

	mu     sync.Mutex
	cfg    Config
	rng    *rand.Rand
	timers map[*time.Timer]struct{}
	closed bool
	wg     sync.WaitGroup

	published, sent, dropped, duplicated, delayed, failed atomic.Int64
}

// Wrap returns inner with the faults of cfg. Closing the result does not
// close inner.
func Wrap(inner notify.Bus, cfg Config) *Bus {
	b := &Bus{inner: inner, timers: map[*time.Timer]struct{}{}}
	b.SetConfig(cfg)
	return b
}

// DropAll returns inner losing every hint published through it.
func DropAll(inner notify.Bus) *Bus { return Wrap(inner, Config{Drop: 1}) }

// SetConfig changes the faults from now on (to heal a network mid-test,
// say). A non-zero Seed restarts the random sequence.
func (b *Bus) SetConfig(cfg Config) {
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 100 * time.Millisecond
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cfg.Seed != 0 {
		b.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	} else if b.rng == nil {
		b.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	b.cfg = cfg
}

// Stats returns the counts so far.
func (b *Bus) Stats() Stats {
	return Stats{
		Published:  b.published.Load(),
		Sent:       b.sent.Load(),
		Dropped:    b.dropped.Load(),
		Duplicated: b.duplicated.Load(),
		Delayed:    b.delayed.Load(),
		Failed:     b.failed.Load(),
	}
}

// Inner returns the wrapped bus.
func (b *Bus) Inner() notify.Bus { return b.inner }

type held struct {
	hint  notify.Hint
	delay time.Duration
}

// Publish applies the faults and publishes what is left on the inner bus.
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.published.Add(int64(len(hints)))
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("faults: bus closed")
	}
	cfg, r := b.cfg, b.rng
	if len(hints) > 0 && r.Float64() < cfg.FailPublish {
		b.mu.Unlock()
		b.failed.Add(1)
		return ErrInjected
	}
	var now []notify.Hint
	var later []held
	shuffle := false
	for _, h := range hints {
		if r.Float64() < cfg.Drop {
			b.dropped.Add(1)
			continue
		}
		n := 1
		if r.Float64() < cfg.Duplicate {
			n = 2
			b.duplicated.Add(1)
		}
		for range n {
			if r.Float64() < cfg.Reorder {
				later = append(later, held{h, time.Duration(r.Int64N(int64(cfg.MaxDelay)) + 1)})
				shuffle = true
			} else {
				now = append(now, h)
			}
		}
	}
	if shuffle {
		r.Shuffle(len(now), func(i, j int) { now[i], now[j] = now[j], now[i] })
	}
	for _, x := range later {
		b.delayed.Add(1)
		b.wg.Add(1)
		var t *time.Timer
		t = time.AfterFunc(x.delay, func() {
			defer b.wg.Done()
			b.mu.Lock()
			_, live := b.timers[t]
			delete(b.timers, t)
			b.mu.Unlock()
			if !live {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if b.inner.Publish(ctx, []notify.Hint{x.hint}) == nil {
				b.sent.Add(1)
			}
		})
		b.timers[t] = struct{}{}
	}
	b.mu.Unlock()
	if len(now) == 0 {
		return nil
	}
	if err := b.inner.Publish(ctx, now); err != nil {
		return err
	}
	b.sent.Add(int64(len(now)))
	return nil
}

// Subscribe subscribes on the inner bus.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	return b.inner.Subscribe(fn)
}

// Close drops the hints still held back, and closes the inner bus when
// the bus was opened by URL.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	for t := range b.timers {
		if t.Stop() {
			b.wg.Done()
		}
		delete(b.timers, t)
	}
	b.mu.Unlock()
	b.wg.Wait()
	if b.owned {
		return notify.Close(b.inner)
	}
	return nil
}

// OpenURL opens the bus named by the url parameter through notify.Open
// and wraps it with the faults of the other parameters: drop, dup,
// reorder, fail (probabilities), delay (MaxDelay) and seed.
func OpenURL(ctx context.Context, u *url.URL) (*Bus, error) {
	var cfg Config
	inner := ""
	err := busurl.Params{
		"url":     busurl.String(&inner),
		"drop":    probability(&cfg.Drop),
		"dup":     probability(&cfg.Duplicate),
		"reorder": probability(&cfg.Reorder),
		"fail":    probability(&cfg.FailPublish),
		"delay":   busurl.Duration(&cfg.MaxDelay),
		"seed":    func(v string) (err error) { cfg.Seed, err = strconv.ParseUint(v, 10, 64); return err },
	}.Set("faults", u.Query())
	if err != nil {
		return nil, err
	}
	if inner == "" {
		return nil, errors.New("faults: the url parameter (the bus to wrap) is required")
	}
	ib, err := notify.Open(ctx, inner)
	if err != nil {
		return nil, err
	}
	b := Wrap(ib, cfg)
	b.owned = true
	return b, nil
}

// probability sets *p to the value, a probability in [0, 1].
func probability(p *float64) func(string) error {
	return func(v string) (err error) {
		*p, err = strconv.ParseFloat(v, 64)
		if err == nil && (*p < 0 || *p > 1) {
			err = fmt.Errorf("%v is not in [0, 1]", *p)
		}
		return err
	}
}
