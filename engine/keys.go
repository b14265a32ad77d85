package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The bucket layout. Every key the engine writes is built here; see
// docs/ARCHITECTURE.md for what each object holds and who writes it.
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
//
// With the sharded layout (Config.KeyLayout, layout.go) runs, leases,
// timers and audit records carry a one-letter shard after their first
// segment — runs/<s>/<run>, leases/<s>/<run>/…, timers/<s>/<due-ms>/<name>,
// audit/<s>/<date>/… — so a store that partitions by key range can spread
// them; the methods below return the layout the engine writes.
type keys struct {
	prefix  string
	sharded bool
}

func (k keys) workflow(name, version string) string {
	return k.prefix + "workflows/" + name + "/" + version
}
func (k keys) workflowLatest(name string) string { return k.prefix + "workflows/" + name + "/@latest" }
func (k keys) workflowsPrefix() string           { return k.prefix + "workflows/" }
func (k keys) worker(id string) string           { return k.prefix + "workers/" + id }
func (k keys) workersPrefix() string             { return k.prefix + "workers/" }
func (k keys) run(id string) string              { return k.runIn(k.sharded, id) }
func (k keys) runsPrefix() string                { return k.prefix + "runs/" }

func (k keys) idempotency(workflow, key string) string {
	h := sha256.Sum256([]byte(workflow + "\x00" + key))
	return k.prefix + "idempotency/" + hex.EncodeToString(h[:])
}

func (k keys) lease(run, step string, attempt int) string {
	return k.leaseIn(k.sharded, run, step, attempt)
}

// timerBucket is the granularity of timer keys: wake-ups of one run in the
// same bucket share a key, so concurrent reapers re-arming a run write the
// same object instead of multiplying them.
const timerBucket = time.Second

func (k keys) timersPrefix() string { return k.prefix + "timers/" }

func (k keys) timer(due time.Time, run string) string {
	ms := due.Truncate(timerBucket).UnixMilli()
	if k.sharded {
		return fmt.Sprintf("%stimers/%c/%013d/%s", k.prefix, shardOf(run), ms, run)
	}
	return fmt.Sprintf("%stimers/%013d/%s", k.prefix, ms, run)
}

// parseTimer splits a timer key of either layout into its due time and
// run id.
func (k keys) parseTimer(key string) (time.Time, string, bool) {
	rest, ok := strings.CutPrefix(key, k.timersPrefix())
	if !ok {
		return time.Time{}, "", false
	}
	if len(rest) > 2 && isShard(rest[0]) && rest[1] == '/' {
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

func (k keys) audit(at time.Time, suffix string) string {
	if k.sharded {
		return fmt.Sprintf("%saudit/%c/%s/%d-%s", k.prefix, shardOf(suffix), at.UTC().Format("2006-01-02"), at.UnixNano(), suffix)
	}
	return fmt.Sprintf("%saudit/%s/%d-%s", k.prefix, at.UTC().Format("2006-01-02"), at.UnixNano(), suffix)
}
