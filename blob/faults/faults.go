// Package faults is a blob middleware that makes a fast local store behave
// like a cloud one: it adds per-operation latency, enforces per-object
// write-rate limits, and injects errors, before or after the real
// operation.
//
// cairn is tested and benchmarked on one machine against the file and
// MinIO stores, which answer in microseconds and never throttle. S3 takes
// ~60 ms for a conditional PUT and GCS refuses more than about one write
// per second to one object name. Wrapping a bucket with the S3 or GCS
// profile shows what a design costs there:
//
//	b := faults.Wrap(mem.New(), faults.GCS)
//
// Injected faults model crashes and lost responses: a Rule with After set
// performs the operation and then reports failure, which is what a caller
// sees when an instance dies after the store applied a write, or when the
// response is lost.
package faults

import (
	"context"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/internal/ctxsleep"
)

// Op names an operation kind.
type Op string

// The operation kinds.
const (
	OpGet    Op = "get"
	OpStat   Op = "stat"
	OpCreate Op = "create"
	OpSwap   Op = "swap"
	OpPut    Op = "put"
	OpDelete Op = "delete"
	OpList   Op = "list"
)

// IsWrite reports whether op writes an object.
func (op Op) IsWrite() bool { return op == OpCreate || op == OpSwap || op == OpPut }

// Latency is a log-normal latency distribution given by its median and
// 99th percentile; the zero value adds no latency.
type Latency struct {
	P50, P99 time.Duration
}

// sample draws one latency.
func (l Latency) sample(r *rand.Rand) time.Duration {
	if l.P50 <= 0 {
		return 0
	}
	if l.P99 <= l.P50 {
		return l.P50
	}
	sigma := math.Log(float64(l.P99)/float64(l.P50)) / 2.326 // z(0.99)
	return time.Duration(float64(l.P50) * math.Exp(sigma*r.NormFloat64()))
}

// Profile describes how a store behaves.
type Profile struct {
	// Name names the profile in benchmark output.
	Name string
	// Read is the latency of GET and HEAD; Write of every PUT kind; List
	// of LIST; Delete of DELETE.
	Read, Write, List, Delete Latency
	// WritesPerObjectPerSecond limits writes to one object name; writes
	// beyond it fail with blob.ErrThrottled (GCS answers 429). 0: no limit.
	WritesPerObjectPerSecond float64
	// TimeScale multiplies every latency and divides the rate limit's
	// period, so tests can run a profile's shape faster. 0 means 1.
	TimeScale float64
}

// Profiles from the clouds' measured and published figures: single-object
// CAS on S3 ≈ 15/s at 58–68 ms, on GCS ≈ 1 write/s per object at
// 500–700 ms.
var (
	S3 = Profile{
		Name:   "s3",
		Read:   Latency{P50: 15 * time.Millisecond, P99: 60 * time.Millisecond},
		Write:  Latency{P50: 60 * time.Millisecond, P99: 150 * time.Millisecond},
		List:   Latency{P50: 40 * time.Millisecond, P99: 150 * time.Millisecond},
		Delete: Latency{P50: 30 * time.Millisecond, P99: 100 * time.Millisecond},
	}
	GCS = Profile{
		Name:                     "gcs",
		Read:                     Latency{P50: 30 * time.Millisecond, P99: 100 * time.Millisecond},
		Write:                    Latency{P50: 80 * time.Millisecond, P99: 700 * time.Millisecond},
		List:                     Latency{P50: 60 * time.Millisecond, P99: 200 * time.Millisecond},
		Delete:                   Latency{P50: 40 * time.Millisecond, P99: 150 * time.Millisecond},
		WritesPerObjectPerSecond: 1,
	}
)

// Scaled returns p with every latency multiplied by s and the rate limit's
// window shortened by s (s < 1 runs faster).
func (p Profile) Scaled(s float64) Profile {
	p.TimeScale = s
	return p
}

// ErrInjected is the error an injected fault returns by default.
var ErrInjected = errors.New("injected fault")

// Rule injects a fault into matching operations.
type Rule struct {
	// Ops restricts the rule to these operations; empty matches all.
	Ops []Op
	// KeyPrefix restricts the rule to keys (or list prefixes) with this
	// prefix.
	KeyPrefix string
	// After performs the operation first and then returns the error: the
	// write is applied but the caller does not know (a lost response, or
	// a crash right after the write).
	After bool
	// Err is the error returned; nil means ErrInjected.
	Err error
	// Probability of firing for each matching operation; 0 means 1.
	Probability float64
	// Skip lets this many matching operations pass before the rule fires.
	Skip int
	// Times is how often the rule fires before it retires; 0 means
	// without end.
	Times int
}

// Store is a bucket's fault-injecting layer; it changes behaviour while in
// use.
type Store struct {
	next blob.Driver

	mu      sync.Mutex
	profile Profile
	rules   []*ruleState
	rng     *rand.Rand
	writes  map[string][]time.Time // recent write times per key
	stats   Stats
}

// Stats counts what the layer did.
type Stats struct {
	// Throttled is how many writes the rate limit refused.
	Throttled int64
	// ThrottledBy counts them by the key's first segment ("runs",
	// "leases", …).
	ThrottledBy map[string]int64
	// Injected is how many faults fired.
	Injected int64
}

type ruleState struct {
	Rule
	seen, fired int
}

// Wrap returns a bucket that behaves like profile over b, and the Store
// that controls it. Closing the returned bucket closes b.
func Wrap(b *blob.Bucket, profile Profile) (*blob.Bucket, *Store) {
	s := &Store{next: b.Driver(), profile: profile, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), writes: map[string][]time.Time{}}
	return blob.NewBucket(s), s
}

// Seed restarts the layer's random source from seed, so the faults and
// latencies it draws repeat for the same sequence of operations.
func (s *Store) Seed(seed uint64) {
	s.mu.Lock()
	s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s.mu.Unlock()
}

// SetProfile changes the store's behaviour.
func (s *Store) SetProfile(p Profile) {
	s.mu.Lock()
	s.profile = p
	s.mu.Unlock()
}

// Inject adds fault rules.
func (s *Store) Inject(rules ...Rule) {
	s.mu.Lock()
	for _, r := range rules {
		s.rules = append(s.rules, &ruleState{Rule: r})
	}
	s.mu.Unlock()
}

// Clear removes every fault rule.
func (s *Store) Clear() {
	s.mu.Lock()
	s.rules = nil
	s.mu.Unlock()
}

// Stats returns what the layer has done so far.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.ThrottledBy = maps.Clone(s.stats.ThrottledBy)
	return st
}

// before decides an operation's latency and fault: the error to return
// before the operation, or the one to return after it.
func (s *Store) before(op Op, key string) (delay time.Duration, pre, post error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.profile
	scale := p.TimeScale
	if scale <= 0 {
		scale = 1
	}
	var l Latency
	switch op {
	case OpGet, OpStat:
		l = p.Read
	case OpList:
		l = p.List
	case OpDelete:
		l = p.Delete
	default:
		l = p.Write
	}
	delay = time.Duration(float64(l.sample(s.rng)) * scale)

	for _, r := range s.rules {
		if r.Times > 0 && r.fired >= r.Times {
			continue
		}
		if len(r.Ops) > 0 && !containsOp(r.Ops, op) || !strings.HasPrefix(key, r.KeyPrefix) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Probability > 0 && s.rng.Float64() >= r.Probability) {
			continue
		}
		r.fired++
		s.stats.Injected++
		err := r.Err
		if err == nil {
			err = ErrInjected
		}
		if r.After {
			post = err
		} else {
			pre = err
		}
		break
	}

	if pre == nil && op.IsWrite() && p.WritesPerObjectPerSecond > 0 {
		now := time.Now()
		window := time.Duration(float64(time.Second) * scale)
		recent := s.writes[key][:0]
		for _, t := range s.writes[key] {
			if now.Sub(t) < window {
				recent = append(recent, t)
			}
		}
		if float64(len(recent)) >= p.WritesPerObjectPerSecond {
			s.stats.Throttled++
			if s.stats.ThrottledBy == nil {
				s.stats.ThrottledBy = map[string]int64{}
			}
			seg, _, _ := strings.Cut(key, "/")
			s.stats.ThrottledBy[seg]++
			pre = blob.ErrThrottled
		} else {
			recent = append(recent, now)
		}
		if len(recent) == 0 {
			delete(s.writes, key)
		} else {
			s.writes[key] = recent
		}
	}
	return delay, pre, post
}

func containsOp(ops []Op, op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// do runs one operation through latency and faults.
func do[T any](s *Store, ctx context.Context, op Op, key string, f func() (T, error)) (T, error) {
	var zero T
	delay, pre, post := s.before(op, key)
	// The Bucket has checked ctx before calling: with no latency there is
	// nothing to wait for.
	if err := ctxsleep.Sleep(ctx, delay); err != nil {
		return zero, err
	}
	if pre != nil {
		return zero, pre
	}
	v, err := f()
	if err == nil && post != nil {
		return zero, post
	}
	return v, err
}

func (s *Store) Get(ctx context.Context, key string) (*blob.Object, error) {
	return do(s, ctx, OpGet, key, func() (*blob.Object, error) { return s.next.Get(ctx, key) })
}

func (s *Store) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	return do(s, ctx, OpStat, key, func() (blob.Attributes, error) { return s.next.Stat(ctx, key) })
}

func (s *Store) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	op := OpPut
	switch {
	case opts.IfNotExist:
		op = OpCreate
	case opts.IfMatch != "":
		op = OpSwap
	}
	return do(s, ctx, op, key, func() (blob.Version, error) { return s.next.Put(ctx, key, data, opts) })
}

func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := do(s, ctx, OpDelete, key, func() (struct{}, error) { return struct{}{}, s.next.Delete(ctx, key) })
	return err
}

func (s *Store) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	return do(s, ctx, OpList, opts.Prefix, func() (blob.ListPage, error) { return s.next.List(ctx, opts) })
}

// As supports **Store and otherwise asks the wrapped driver.
func (s *Store) As(target any) bool {
	if p, ok := target.(**Store); ok {
		*p = s
		return true
	}
	return s.next.As(target)
}

// Close closes the wrapped driver.
func (s *Store) Close() error { return s.next.Close() }
