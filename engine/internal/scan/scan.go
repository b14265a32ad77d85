// Package scan lists the bucket's ordered keys over both key layouts
// (engine/internal/keys): the flat listing and, with the sharded layout,
// its 16 shards, listed in parallel and merged into the order one flat
// listing would have. The reaper's due timers, the claims' fallback scan
// and the newest-first run listing read through it.
package scan

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/errs"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/throttle"
)

// RetryRead runs read, a request that changes nothing (a GET, a LIST), up
// to 4 times with jitter between: one transient store error among a
// listing page's fifty reads failed the page (at a 0.5 % fault rate about
// one page in five; the chaos suite's full listing never finished), and a
// failed LIST of a page with a cursor was taken for a bad cursor and
// answered 422. Not found, a bad argument, a corrupt object and the
// request's end are returned at once: trying again does not change them.
func RetryRead(ctx context.Context, read func() error) error {
	for attempt := 0; ; attempt++ {
		err := read()
		if err == nil || attempt >= 3 || ctx.Err() != nil || errors.Is(err, blob.ErrNotFound) ||
			errors.Is(err, blob.ErrInvalidArgument) || errors.Is(err, errs.ErrCorrupt) {
			return err
		}
		throttle.Jitter(ctx, attempt)
	}
}

// Lister lists the keys of one bucket under one layout.
type Lister struct {
	Bucket *blob.Bucket
	Keys   keys.Layout
}

// List is a LIST of one listing page, through RetryRead.
func (l Lister) List(ctx context.Context, opts blob.ListOptions) (p blob.ListPage, err error) {
	err = RetryRead(ctx, func() (err error) {
		p, err = l.Bucket.List(ctx, opts)
		return err
	})
	return p, err
}

// CursorRefused tells whether a listing failed because of its page token
// rather than the store: a store refusing a token it did not make (S3
// answers 400) and a store that is down look alike, and only the second
// may be answered as the store's failure. The first page is listed again
// without the token: if that works, the token was at fault.
func (l Lister) CursorRefused(ctx context.Context, opts blob.ListOptions, err error) bool {
	if errors.Is(err, blob.ErrInvalidArgument) {
		return true
	}
	if blob.IsRetryable(err) || ctx.Err() != nil {
		return false
	}
	opts.PageToken, opts.PageSize = "", 1
	_, err = l.Bucket.List(ctx, opts)
	return err == nil
}

// Ordered lists every listing in parallel, page by page, handing each key
// to keep in order until keep says stop or the listing ends. keep runs on
// one goroutine per listing; it returns whether to go on. It returns the
// number of LIST requests made.
func (l Lister) Ordered(ctx context.Context, ls []keys.Listing, pageSize int, keep func(i int, key string) bool) (int, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lists int
		first error
	)
	for i, li := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := blob.ListOptions{Prefix: li.Prefix, PageSize: pageSize}
			for {
				p, err := l.List(ctx, opts)
				mu.Lock()
				lists++
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
				for _, o := range p.Objects {
					if li.End != "" && o.Key >= li.End {
						return
					}
					if !keep(i, o.Key) {
						return
					}
				}
				if p.NextPageToken == "" {
					return
				}
				opts.PageToken = p.NextPageToken
			}
		}()
	}
	wg.Wait()
	return lists, first
}

// Timer is a timer key and what it names.
type Timer struct {
	Key  string
	At   time.Time
	Name string
}

// After reports whether t comes after u in a listing's order.
func (t Timer) After(u Timer) bool {
	return t.At.After(u.At) || t.At.Equal(u.At) && t.Name > u.Name
}

// DueTimers lists the timers due at now across the layout's listings,
// ordered by due time (then name). It returns the LIST requests made.
func (l Lister) DueTimers(ctx context.Context, now time.Time) ([]Timer, int, error) {
	ls := l.Keys.Listings("timers/")
	per := make([][]Timer, len(ls))
	n, err := l.Ordered(ctx, ls, 1000, func(i int, key string) bool {
		at, name, ok := l.Keys.ParseTimer(key)
		if !ok {
			return true
		}
		if at.After(now) {
			return false
		}
		per[i] = append(per[i], Timer{Key: key, At: at, Name: name})
		return true
	})
	if err != nil {
		return nil, n, err
	}
	all := merge(per)
	if len(ls) > 1 {
		SortTimers(all)
	}
	return all, n, nil
}

func merge[T any](per [][]T) []T {
	var all []T
	for _, p := range per {
		all = append(all, p...)
	}
	return all
}

// SortTimers orders timers as one flat listing would: by due time, then
// name.
func SortTimers(ts []Timer) {
	sort.SliceStable(ts, func(i, j int) bool { return ts[j].After(ts[i]) })
}

// FirstTimers lists the first page (up to n keys) of every timer listing
// of the layout, merged by due time: what the claims' fallback scan reads.
// With the sharded layout that is 17 LISTs a scan instead of one.
func (l Lister) FirstTimers(ctx context.Context, n int) ([]string, error) {
	ls := l.Keys.Listings("timers/")
	if len(ls) == 1 {
		p, err := l.Bucket.List(ctx, blob.ListOptions{Prefix: ls[0].Prefix, PageSize: n})
		if err != nil {
			return nil, err
		}
		out := make([]string, len(p.Objects))
		for i, o := range p.Objects {
			out[i] = o.Key
		}
		return out, nil
	}
	per := make([][]Timer, len(ls))
	_, err := l.Ordered(ctx, ls, n, func(i int, key string) bool {
		at, name, ok := l.Keys.ParseTimer(key)
		if ok {
			per[i] = append(per[i], Timer{Key: key, At: at, Name: name})
		}
		return len(per[i]) < n
	})
	if err != nil {
		return nil, err
	}
	all := merge(per)
	SortTimers(all)
	out := make([]string, 0, n)
	for _, t := range all[:min(n, len(all))] {
		out = append(out, t.Key)
	}
	return out, nil
}

// RunKeys returns up to need run keys, newest first, of runs whose id
// sorts after `after` ("" from the start), merged across the layout's
// listings, and whether more may follow.
func (l Lister) RunKeys(ctx context.Context, after string, need int) ([]string, bool, error) {
	ls := l.Keys.Listings("runs/")
	type cand struct{ id, key string }
	per := make([][]cand, len(ls))
	more := make([]bool, len(ls))
	pageSize := need + 1
	if after != "" {
		pageSize = 1000 // skipping to the position: as few pages as possible
	}
	_, err := l.Ordered(ctx, ls, pageSize, func(i int, key string) bool {
		id := key[strings.LastIndexByte(key, '/')+1:]
		if id <= after {
			return true
		}
		if len(per[i]) == need {
			more[i] = true
			return false
		}
		per[i] = append(per[i], cand{id, key})
		return true
	})
	if err != nil {
		return nil, false, err
	}
	all := merge(per)
	anyMore := false
	for _, m := range more {
		anyMore = anyMore || m
	}
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	if len(all) > need {
		all, anyMore = all[:need], true
	}
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = c.key
	}
	return out, anyMore, nil
}

// Parse is the timers timerKeys (in index order) name that are due by
// horizon: a run with a ready step has one; later ones are sleeps, wait
// timeouts and retention.
func Parse(k keys.Layout, timerKeys []string, horizon time.Time) []Timer {
	var out []Timer
	for _, key := range timerKeys {
		if at, name, ok := k.ParseTimer(key); ok && !at.After(horizon) {
			out = append(out, Timer{Key: key, At: at, Name: name})
		}
	}
	return out
}

// Order is the order in which a fallback scan reads the runs timers name
// (Parse's answer, group timers expanded: FallbackHost.Expand): each run
// once, at its first timer, and only run ids, starting after the
// position after and wrapping around to the first.
func Order(timers []Timer, after Timer) []Timer {
	seen := map[string]bool{}
	var all []Timer
	for _, t := range timers {
		if seen[t.Name] || !keys.RunID.Valid(t.Name) {
			continue
		}
		seen[t.Name] = true
		all = append(all, t)
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].After(after) })
	return append(all[i:len(all):len(all)], all[:i]...)
}

// Rotation is where one instance's fallback scans are: when the last one
// began and the run it read last, so that each scan reads the runs after
// it and successive scans cover every due run.
type Rotation struct {
	mu    sync.Mutex
	last  time.Time
	after Timer
	// Start picks where an instance's first scan starts among n runs
	// (rand.IntN; a test fixes it).
	Start func(n int) int
}

// Due tells whether a scan spaced every apart is due at now (a clock that
// went back makes one due).
func (r *Rotation) Due(now time.Time, every time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Sub(r.last) >= every || now.Before(r.last)
}

// Begin starts a scan at now when one is due (every apart): ok is false
// when none is. after is the position to go on after.
func (r *Rotation) Begin(now time.Time, every time.Duration) (after Timer, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.last) < every && !now.Before(r.last) {
		return Timer{}, false
	}
	r.last = now
	return r.after, true
}

// Pick takes up to n of runs (Order's answer for after) and records the
// last one taken as where the next scan goes on. An instance's first
// scan starts at a run Start picks: each started at the first, instances
// that restart more often than a whole rotation takes would read the
// same runs again and again and never the ones behind them.
func (r *Rotation) Pick(runs []Timer, after Timer, n int) []Timer {
	if after.Name == "" && len(runs) > n {
		i := r.Start(len(runs))
		runs = append(runs[i:len(runs):len(runs)], runs[:i]...)
	}
	runs = runs[:min(n, len(runs))]
	if len(runs) > 0 {
		r.mu.Lock()
		r.after = runs[len(runs)-1]
		r.mu.Unlock()
	}
	return runs
}
