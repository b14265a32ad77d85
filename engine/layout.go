package engine

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/blob"
)

// Key layouts (Config.KeyLayout).
//
// The flat layout is the original one: runs/<run>, leases/<run>/…,
// timers/<due-ms>/<name>, audit/<date>/…. Run ids are ULIDs with inverted
// time and timer keys start with their due time, so every object a burst
// writes shares a long prefix with the others: on a store that serves a
// bucket from key-range partitions (S3, GCS) they all land on one
// partition, which splitting cannot relieve (the next key is always at
// the edge).
//
// The sharded layout puts a one-letter shard (a–p, from a hash of the run
// id or timer name) after the first segment: runs/<s>/<run>,
// leases/<s>/<run>/…, timers/<s>/<due-ms>/<name>, audit/<s>/<date>/….
// The store can then split each kind into 16 ranges that each take a
// sixteenth of the load. Listings that must be ordered list the 16 shards
// (and the flat prefix, for objects written before the switch) in
// parallel and merge: run ids and due times order the same way in every
// shard. Shard letters are lower case and sort after every flat key
// (digits and upper-case ULIDs), so the flat part of a listing is the
// keys before <prefix>a.
//
// Migration: an engine reads both layouts (its own first; the other only
// when the object is not found) and writes its own. A run record names
// its layout (runRecord.Layout), and its leases are always written in it,
// so engines of both layouts claiming one run create the same lease key.
const (
	KeyLayoutFlat    = "flat"
	KeyLayoutSharded = "sharded"
	// keyShards is the number of shards of the sharded layout. It is
	// fixed: a run's key is found from its id, so it must not change.
	keyShards = 16
)

// shardOf is the shard letter of a run id or timer name.
func shardOf(name string) byte {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 'a' + byte(h.Sum32()%keyShards)
}

func isShard(c byte) bool { return c >= 'a' && c < 'a'+keyShards }

// checkKeyLayout validates Config.KeyLayout.
func checkKeyLayout(l string) error {
	switch l {
	case "", KeyLayoutFlat, KeyLayoutSharded:
		return nil
	}
	return fmt.Errorf("engine: key layout %q: want %q or %q", l, KeyLayoutFlat, KeyLayoutSharded)
}

func (k keys) runIn(sharded bool, id string) string {
	if sharded {
		return k.prefix + "runs/" + string(shardOf(id)) + "/" + id
	}
	return k.prefix + "runs/" + id
}

func (k keys) leaseIn(sharded bool, run, step string, attempt int) string {
	if sharded {
		return fmt.Sprintf("%sleases/%c/%s/%s/%06d", k.prefix, shardOf(run), run, step, attempt)
	}
	return fmt.Sprintf("%sleases/%s/%s/%06d", k.prefix, run, step, attempt)
}

func (k keys) leasesOfIn(sharded bool, run string) string {
	if sharded {
		return k.prefix + "leases/" + string(shardOf(run)) + "/" + run + "/"
	}
	return k.prefix + "leases/" + run + "/"
}

// layout is the name of the layout this engine writes.
func (k keys) layout() string {
	if k.sharded {
		return KeyLayoutSharded
	}
	return ""
}

// runOf is the key of r's record, in the layout r was created in.
func (k keys) runOf(r *runRecord) string { return k.runIn(r.Layout == KeyLayoutSharded, r.ID) }

// leaseOf is the key of a lease of r, in r's layout.
func (k keys) leaseOf(r *runRecord, step string, attempt int) string {
	return k.leaseIn(r.Layout == KeyLayoutSharded, r.ID, step, attempt)
}

// leasesOfRun is the prefix of r's leases, in r's layout.
func (k keys) leasesOfRun(r *runRecord) string {
	return k.leasesOfIn(r.Layout == KeyLayoutSharded, r.ID)
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

// otherRun is the key of run id in the layout this engine does not write.
func (k keys) otherRun(id string) string { return k.runIn(!k.sharded, id) }

// readLeaseAt reads the lease of (run, step, attempt) in either layout and
// returns the key it was found at.
func (e *Engine) readLeaseAt(ctx context.Context, run, step string, attempt int) (*leaseRecord, blob.Version, string, error) {
	return readEither[leaseRecord](ctx, e.store, e.keys.leaseIn(e.keys.sharded, run, step, attempt), e.keys.leaseIn(!e.keys.sharded, run, step, attempt))
}

// listing is one prefix an ordered listing covers, and the key before
// which it stops (the flat part of a sharded listing ends where the
// shards begin).
type listing struct {
	prefix, end string
}

// listings are the prefixes under base ("runs/", "timers/") that an
// ordered listing merges: the flat one, and with the sharded layout the
// 16 shards.
func (k keys) listings(base string) []listing {
	base = k.prefix + base
	if !k.sharded {
		return []listing{{prefix: base}}
	}
	out := []listing{{prefix: base, end: base + "a"}}
	for i := 0; i < keyShards; i++ {
		out = append(out, listing{prefix: base + string(rune('a'+i)) + "/"})
	}
	return out
}

// listOrdered lists every listing in parallel, page by page, handing each
// key to keep in order until keep says stop or the listing ends. keep
// runs on one goroutine per listing; it returns whether to go on. It
// returns the number of LIST requests made.
func (e *Engine) listOrdered(ctx context.Context, ls []listing, pageSize int, keep func(i int, key string) bool) (int, error) {
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
			opts := blob.ListOptions{Prefix: l.prefix, PageSize: pageSize}
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
					if l.end != "" && o.Key >= l.end {
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
	ls := e.keys.listings("timers/")
	per := make([][]dueTimer, len(ls))
	n, err := e.listOrdered(ctx, ls, 1000, func(i int, key string) bool {
		at, name, ok := e.keys.parseTimer(key)
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
	ls := e.keys.listings("timers/")
	if len(ls) == 1 {
		p, err := e.store.List(ctx, blob.ListOptions{Prefix: ls[0].prefix, PageSize: n})
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
		at, name, ok := e.keys.parseTimer(key)
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
	ls := e.keys.listings("runs/")
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
func (l *leaseRecord) keyIn(k keys) string {
	if l.key != "" {
		return l.key
	}
	return k.lease(l.Run, l.Step, l.Attempt)
}

// timerKeys are the keys a timer of name due at due may have: its key in
// this engine's layout, and with the sharded layout also the flat one (a
// timer armed before the switch).
func (k keys) timerKeys(due time.Time, name string) []string {
	if !k.sharded {
		return []string{k.timer(due, name)}
	}
	flat := k
	flat.sharded = false
	return []string{k.timer(due, name), flat.timer(due, name)}
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
	if after != "" && !runIDRule.valid(after) {
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
	return out, encodeCursor(runCursorPrefix + after), nil
}
