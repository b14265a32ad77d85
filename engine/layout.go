package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/keys"
)

// Key layouts (Config.KeyLayout): the keys of each, and why the sharded
// one, are in engine/internal/keys. An engine reads both layouts (its own
// first; the other only when the object is not found) and writes its own.
const (
	KeyLayoutFlat    = keys.NameFlat
	KeyLayoutSharded = keys.NameSharded
)

// checkKeyLayout validates Config.KeyLayout.
func checkKeyLayout(l string) error {
	switch l {
	case "", KeyLayoutFlat, KeyLayoutSharded:
		return nil
	}
	return fmt.Errorf("engine: key layout %q: want %q or %q", l, KeyLayoutFlat, KeyLayoutSharded)
}

// readEither reads key, and when it is not found, other (the same object
// in the other layout).
func readEither[T any](ctx context.Context, store *blob.Bucket, key, other string) (*T, blob.Version, string, error) {
	v, ver, err := readJSON[T](ctx, store, key)
	if isNotFound(err) && other != key {
		v, ver, err = readJSON[T](ctx, store, other)
		return v, ver, other, err
	}
	return v, ver, key, err
}

// getEither is readEither for raw objects.
func getEither(ctx context.Context, store *blob.Bucket, key, other string) (*blob.Object, error) {
	o, err := store.Get(ctx, key)
	if isNotFound(err) && other != key {
		return store.Get(ctx, other)
	}
	return o, err
}

// readLeaseAt reads the lease of (run, step, attempt) in either layout and
// returns the key it was found at.
func (e *Engine) readLeaseAt(ctx context.Context, run, step string, attempt int) (*leaseRecord, blob.Version, string, error) {
	return readEither[leaseRecord](ctx, e.store, e.keys.LeaseIn(e.keys.Sharded, run, step, attempt), e.keys.LeaseIn(!e.keys.Sharded, run, step, attempt))
}

// listOrdered lists every listing in parallel, page by page, handing each
// key to keep in order until keep says stop or the listing ends. keep
// runs on one goroutine per listing; it returns whether to go on. It
// returns the number of LIST requests made.
func (e *Engine) listOrdered(ctx context.Context, ls []keys.Listing, pageSize int, keep func(i int, key string) bool) (int, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lists int
		first error
	)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := blob.ListOptions{Prefix: l.Prefix, PageSize: pageSize}
			for {
				p, err := e.listRetrying(ctx, opts)
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
					if l.End != "" && o.Key >= l.End {
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

// dueTimer is a due timer key and what it names.
type dueTimer struct {
	key  string
	at   time.Time
	name string
}

// dueTimers lists the timers due at now across the layout's listings,
// ordered by due time (then name). It returns the LIST requests made.
func (e *Engine) dueTimers(ctx context.Context, now time.Time) ([]dueTimer, int, error) {
	ls := e.keys.Listings("timers/")
	per := make([][]dueTimer, len(ls))
	n, err := e.listOrdered(ctx, ls, 1000, func(i int, key string) bool {
		at, name, ok := e.keys.ParseTimer(key)
		if !ok {
			return true
		}
		if at.After(now) {
			return false
		}
		per[i] = append(per[i], dueTimer{key: key, at: at, name: name})
		return true
	})
	if err != nil {
		return nil, n, err
	}
	var all []dueTimer
	for _, p := range per {
		all = append(all, p...)
	}
	if len(ls) > 1 {
		sortTimers(all)
	}
	return all, n, nil
}

// sortTimers orders timers as one flat listing would: by due time, then
// name.
func sortTimers(ts []dueTimer) {
	sort.SliceStable(ts, func(i, j int) bool {
		if !ts[i].at.Equal(ts[j].at) {
			return ts[i].at.Before(ts[j].at)
		}
		return ts[i].name < ts[j].name
	})
}

// scanTimers lists the first page (up to n keys) of every timer listing
// of the layout, merged by due time: what the claims' fallback scan reads.
// With the sharded layout that is 17 LISTs a scan instead of one.
func (e *Engine) scanTimers(ctx context.Context, n int) ([]string, error) {
	ls := e.keys.Listings("timers/")
	if len(ls) == 1 {
		p, err := e.store.List(ctx, blob.ListOptions{Prefix: ls[0].Prefix, PageSize: n})
		if err != nil {
			return nil, err
		}
		out := make([]string, len(p.Objects))
		for i, o := range p.Objects {
			out[i] = o.Key
		}
		return out, nil
	}
	per := make([][]dueTimer, len(ls))
	_, err := e.listOrdered(ctx, ls, n, func(i int, key string) bool {
		at, name, ok := e.keys.ParseTimer(key)
		if ok {
			per[i] = append(per[i], dueTimer{key: key, at: at, name: name})
		}
		return len(per[i]) < n
	})
	if err != nil {
		return nil, err
	}
	var all []dueTimer
	for _, p := range per {
		all = append(all, p...)
	}
	sortTimers(all)
	out := make([]string, 0, n)
	for _, t := range all[:min(n, len(all))] {
		out = append(out, t.key)
	}
	return out, nil
}

// runCursorPrefix marks a run listing cursor of the merged listing: the
// id of the last run the previous page examined. Run ids sort the same in
// every shard, so "after this id" is a position in all of them at once,
// and the cursor stays short however many shards there are. A cursor
// without it is a store page token of the flat listing (from an engine
// before the sharded layout).
const runCursorPrefix = "after:"

// listRunKeys returns up to need run keys, newest first, of runs whose id
// sorts after `after` ("" from the start), merged across the layout's
// listings, and whether more may follow.
func (e *Engine) listRunKeys(ctx context.Context, after string, need int) ([]string, bool, error) {
	ls := e.keys.Listings("runs/")
	type cand struct{ id, key string }
	per := make([][]cand, len(ls))
	more := make([]bool, len(ls))
	pageSize := need + 1
	if after != "" {
		pageSize = 1000 // skipping to the position: as few pages as possible
	}
	_, err := e.listOrdered(ctx, ls, pageSize, func(i int, key string) bool {
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
	var all []cand
	anyMore := false
	for i, p := range per {
		all = append(all, p...)
		anyMore = anyMore || more[i]
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

// keyIn is where l lives: where it was read, else its key in the layout k
// writes.
func (l *leaseRecord) keyIn(k keys.Layout) string {
	if l.key != "" {
		return l.key
	}
	return k.Lease(l.Run, l.Step, l.Attempt)
}

// row is r's row in a listing, and whether it passes the filters.
func (req ListRequest) row(r *runRecord) (RunRow, bool) {
	if req.Workflow != "" && r.Workflow != req.Workflow || req.Status != "" && r.Status != req.Status ||
		req.Correlation != "" && r.Correlation != req.Correlation {
		return RunRow{}, false
	}
	s := cairn.RunSummary{ID: r.ID, Workflow: r.Workflow, Version: r.Version, Status: r.Status, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt, StepsTotal: len(r.Steps), Error: r.Error}
	for _, st := range r.Steps {
		if st.Status.Settled() {
			s.StepsDone++
		}
	}
	return RunRow{RunSummary: s, Correlation: r.Correlation, CostUSD: r.Usage.CostUSD, Priority: r.Priority}, true
}

// listRunRowsMerged is ListRunRows over the sharded layout: newest first
// across the flat listing and the 16 shards, after the run id `after`.
// The cursor is the id of the last run examined, so a page of a filtered
// listing that examined listScanPages batches without filling up is
// short and has a cursor, as with the flat layout.
func (e *Engine) listRunRowsMerged(ctx context.Context, req ListRequest, after string) ([]RunRow, string, error) {
	if after != "" && !keys.RunID.Valid(after) {
		return nil, "", cairn.ValidationError{{Field: "cursor", Message: "not a cursor this listing returned"}}
	}
	var out []RunRow
	more := false
	for pages := 0; pages < listScanPages && len(out) < req.Limit; pages++ {
		keys, m, err := e.listRunKeys(ctx, after, req.Limit-len(out))
		if err != nil {
			return nil, "", err
		}
		more = m
		if len(keys) > 0 {
			key := keys[len(keys)-1]
			after = key[strings.LastIndexByte(key, '/')+1:]
		}
		rows, err := e.listedRows(ctx, req, keys)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rows...)
		if !more {
			break
		}
	}
	if !more {
		return out, "", nil
	}
	return out, keys.EncodeCursor(runCursorPrefix + after), nil
}
