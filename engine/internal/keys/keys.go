// Package keys is the bucket layout: every key the engine writes is built
// here, in the flat or the sharded layout, and the ids callers name are
// checked here before they become segments of keys (ids.go). See
// docs/ARCHITECTURE.md for what each object holds and who writes it.
package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// The bucket layout.
//
//	workflows/<name>/<version>       definition, create-only, immutable
//	workflows/<name>/@latest         newest registered version (CAS)
//	workers/<id>                     worker record (plain put at register)
//	runs/<run>                       run record (CAS, group-committed)
//	idempotency/<sha256>             start idempotency: key → run id (create-only)
//	leases/<run>/<step>/<attempt>    one lease per attempt (create-only, then CAS)
//	timers/<due-ms>/<run>            run wake-up for the reaper (plain put, delete)
//	maps/<run>/<step>/items-<sha>    a map step's items (plain put, content-addressed: mapstep.go)
//	maps/<run>/<step>/out-<k>-<sha>  a map step's outputs, shard k of 100 items (same)
//	audit/<date>/<ns>-<rand>         audit record of a read (create-only)
//	payloads/<run>/<sha256>          a value stored by reference (create-only; payloads.go)
//	schedules/<id>                   a schedule (create-only, then CAS)
//	limits/<sha256>                  a concurrency key's slot holders (create-only, then CAS)
//	ratelimits/<sha256>              a rate limit key's GCRA state (create-only, then CAS)
//	singletons/<sha256>              the run holding a singleton key (create-only, then CAS)
//	cancelon/<sha256>/<run>          a run an event of that name may cancel (plain put; deleted when seen ended)
//	gates/<sha256>/state             a debounce or batch key's open window number (create-only, then CAS)
//	gates/<sha256>/<n>/...           its window n: open, fired (create-only), e/<xx>/<ms>-<id> events (create-only)
//	batches/<id>                     a bulk cancel or rerun (create-only, then CAS)
//	kv/<namespace>/<key>             a long-term store value (plain, or conditional put; engine/kv)
//	cache/<workflow>/<step>/<sha256> a step's result cache entry (plain put; engine/resultcache)
//	triggers/<sha256>/<workflow>     a workflow with a trigger of an event (create-only at registration)
//
// With the sharded layout (Config.KeyLayout) runs, leases, timers and
// audit records carry a one-letter shard after their first segment —
// runs/<s>/<run>, leases/<s>/<run>/…, timers/<s>/<due-ms>/<name>,
// audit/<s>/<date>/… — so a store that partitions by key range can spread
// them; the methods below return the layout the engine writes.
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

// Layout is the key layout an engine writes: its prefix, and whether it
// is the sharded one.
type Layout struct {
	Prefix  string
	Sharded bool
}

// The names of the layouts (Config.KeyLayout, runRecord.Layout).
const (
	NameFlat    = "flat"
	NameSharded = "sharded"
	// Shards is the number of shards of the sharded layout. It is fixed:
	// a run's key is found from its id, so it must not change.
	Shards = 16
)

// ShardOf is the shard letter of a run id or timer name.
func ShardOf(name string) byte {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 'a' + byte(h.Sum32()%Shards)
}

// IsShard reports whether c is a shard letter.
func IsShard(c byte) bool { return c >= 'a' && c < 'a'+Shards }

func (k Layout) Workflow(name, version string) string {
	return k.Prefix + "workflows/" + name + "/" + version
}
func (k Layout) WorkflowLatest(name string) string {
	return k.Prefix + "workflows/" + name + "/@latest"
}
func (k Layout) WorkflowsPrefix() string { return k.Prefix + "workflows/" }
func (k Layout) Worker(id string) string { return k.Prefix + "workers/" + id }
func (k Layout) WorkersPrefix() string   { return k.Prefix + "workers/" }
func (k Layout) Run(id string) string    { return k.RunIn(k.Sharded, id) }
func (k Layout) RunsPrefix() string      { return k.Prefix + "runs/" }

func (k Layout) Idempotency(workflow, key string) string {
	h := sha256.Sum256([]byte(workflow + "\x00" + key))
	return k.Prefix + "idempotency/" + hex.EncodeToString(h[:])
}

func (k Layout) Lease(run, step string, attempt int) string {
	return k.LeaseIn(k.Sharded, run, step, attempt)
}

// TimerBucket is the granularity of timer keys: wake-ups of one run in the
// same bucket share a key, so concurrent reapers re-arming a run write the
// same object instead of multiplying them.
const TimerBucket = time.Second

func (k Layout) TimersPrefix() string { return k.Prefix + "timers/" }

func (k Layout) Timer(due time.Time, run string) string {
	ms := due.Truncate(TimerBucket).UnixMilli()
	if k.Sharded {
		return fmt.Sprintf("%stimers/%c/%013d/%s", k.Prefix, ShardOf(run), ms, run)
	}
	return fmt.Sprintf("%stimers/%013d/%s", k.Prefix, ms, run)
}

// ParseTimer splits a timer key of either layout into its due time and
// run id.
func (k Layout) ParseTimer(key string) (time.Time, string, bool) {
	rest, ok := strings.CutPrefix(key, k.TimersPrefix())
	if !ok {
		return time.Time{}, "", false
	}
	if len(rest) > 2 && IsShard(rest[0]) && rest[1] == '/' {
		rest = rest[2:]
	}
	ms, run, ok := strings.Cut(rest, "/")
	if !ok {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.UnixMilli(n), run, true
}

func (k Layout) Audit(at time.Time, suffix string) string {
	if k.Sharded {
		return fmt.Sprintf("%saudit/%c/%s/%d-%s", k.Prefix, ShardOf(suffix), at.UTC().Format("2006-01-02"), at.UnixNano(), suffix)
	}
	return fmt.Sprintf("%saudit/%s/%d-%s", k.Prefix, at.UTC().Format("2006-01-02"), at.UnixNano(), suffix)
}

func (k Layout) RunIn(sharded bool, id string) string {
	if sharded {
		return k.Prefix + "runs/" + string(ShardOf(id)) + "/" + id
	}
	return k.Prefix + "runs/" + id
}

func (k Layout) LeaseIn(sharded bool, run, step string, attempt int) string {
	if sharded {
		return fmt.Sprintf("%sleases/%c/%s/%s/%06d", k.Prefix, ShardOf(run), run, step, attempt)
	}
	return fmt.Sprintf("%sleases/%s/%s/%06d", k.Prefix, run, step, attempt)
}

func (k Layout) LeasesOfIn(sharded bool, run string) string {
	if sharded {
		return k.Prefix + "leases/" + string(ShardOf(run)) + "/" + run + "/"
	}
	return k.Prefix + "leases/" + run + "/"
}

// Name is the name of the layout this engine writes, as a run record
// holds it ("" for the flat layout).
func (k Layout) Name() string {
	if k.Sharded {
		return NameSharded
	}
	return ""
}

// RunOf is the key of the record of run id created in the layout named
// layout (a run record's Layout).
func (k Layout) RunOf(layout, id string) string { return k.RunIn(layout == NameSharded, id) }

// LeaseOf is the key of a lease of run id, in the layout named layout.
func (k Layout) LeaseOf(layout, run, step string, attempt int) string {
	return k.LeaseIn(layout == NameSharded, run, step, attempt)
}

// LeasesOfRun is the prefix of the leases of run id, in the layout named
// layout.
func (k Layout) LeasesOfRun(layout, run string) string {
	return k.LeasesOfIn(layout == NameSharded, run)
}

// OtherRun is the key of run id in the layout this engine does not write.
func (k Layout) OtherRun(id string) string { return k.RunIn(!k.Sharded, id) }

// Listing is one prefix an ordered listing covers, and the key before
// which it stops (the flat part of a sharded listing ends where the
// shards begin).
type Listing struct {
	Prefix, End string
}

// Listings are the prefixes under base ("runs/", "timers/") that an
// ordered listing merges: the flat one, and with the sharded layout the
// 16 shards.
func (k Layout) Listings(base string) []Listing {
	base = k.Prefix + base
	if !k.Sharded {
		return []Listing{{Prefix: base}}
	}
	out := []Listing{{Prefix: base, End: base + "a"}}
	for i := 0; i < Shards; i++ {
		out = append(out, Listing{Prefix: base + string(rune('a'+i)) + "/"})
	}
	return out
}

// TimerKeys are the keys a timer of name due at due may have: its key in
// this engine's layout, and with the sharded layout also the flat one (a
// timer armed before the switch).
func (k Layout) TimerKeys(due time.Time, name string) []string {
	if !k.Sharded {
		return []string{k.Timer(due, name)}
	}
	flat := k
	flat.Sharded = false
	return []string{k.Timer(due, name), flat.Timer(due, name)}
}

// MaxTimerWindowLists bounds the prefixes of a TimerWindow (per layout).
const MaxTimerWindowLists = 4

// TimerWindow returns the listing prefixes that cover the timers of name
// due from lo to hi: at most MaxTimerWindowLists decimal blocks of the
// due time in milliseconds, per layout, as TimerKeys.
func (k Layout) TimerWindow(lo, hi time.Time, name string) []string {
	a, b := lo.UnixMilli(), hi.UnixMilli()
	digits, block := 13, int64(1) // timer keys hold %013d milliseconds
	for b/block-a/block >= MaxTimerWindowLists {
		block *= 10
		digits--
	}
	var out []string
	for i := a / block; i <= b/block; i++ {
		ms := fmt.Sprintf("%0*d", digits, i)
		if k.Sharded {
			out = append(out, fmt.Sprintf("%stimers/%c/%s", k.Prefix, ShardOf(name), ms))
		}
		out = append(out, k.Prefix+"timers/"+ms)
	}
	return out
}

func (k Layout) Payload(run, sha string) string { return k.Prefix + "payloads/" + run + "/" + sha }
func (k Layout) PayloadsOf(run string) string   { return k.Prefix + "payloads/" + run + "/" }

func (k Layout) MapPrefix(run string) string { return k.Prefix + "maps/" + run + "/" }
func (k Layout) MapItems(run, step, sum string) string {
	return k.MapPrefix(run) + step + "/items-" + sum
}
func (k Layout) MapShard(run, step string, shard int, sum string) string {
	return fmt.Sprintf("%s%s/out-%05d-%s", k.MapPrefix(run), step, shard, sum)
}

// AttrsPrefix is the search attribute index (engine/internal/attrs).
func (k Layout) AttrsPrefix() string { return k.Prefix + "attrs/" }

func (k Layout) Schedule(id string) string { return k.Prefix + "schedules/" + id }
func (k Layout) SchedulesPrefix() string   { return k.Prefix + "schedules/" }

func (k Layout) Batch(id string) string { return k.Prefix + "batches/" + id }

// Limit is the object of a concurrency key's slot holders.
func (k Layout) Limit(scope, key string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + key))
	return k.Prefix + "limits/" + hex.EncodeToString(h[:])
}

// CancelOn is the index entry of a running run that an event of this name
// may cancel; CancelsOf is the prefix of the event's entries.
func (k Layout) CancelOn(event, run string) string { return k.CancelsOf(event) + run }

// CancelsOf is the prefix of the runs an event of this name may cancel.
func (k Layout) CancelsOf(event string) string {
	h := sha256.Sum256([]byte(event))
	return k.Prefix + "cancelon/" + hex.EncodeToString(h[:]) + "/"
}

// Gate is the prefix of a debounce or batch key's objects (scope: the
// workflow and the kind).
func (k Layout) Gate(scope, key string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + key))
	return k.Prefix + "gates/" + hex.EncodeToString(h[:]) + "/"
}

// Singleton is the object naming the run that holds a singleton key.
func (k Layout) Singleton(scope, key string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + key))
	return k.Prefix + "singletons/" + hex.EncodeToString(h[:])
}

// Rate is the object of a rate limit key's GCRA state.
func (k Layout) Rate(scope, key string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + key))
	return k.Prefix + "ratelimits/" + hex.EncodeToString(h[:])
}

// Trigger is the index entry saying that workflow has (or had) a trigger
// of event; TriggersOf is the prefix of the event's entries.
func (k Layout) Trigger(event, workflow string) string { return k.TriggersOf(event) + workflow }

func (k Layout) TriggersOf(event string) string {
	h := sha256.Sum256([]byte(event))
	return k.Prefix + "triggers/" + hex.EncodeToString(h[:]) + "/"
}
